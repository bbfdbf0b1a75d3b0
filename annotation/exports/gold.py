"""The gold export: one row per card and group, with the group's consensus and its
provenance, the card's status, its study-level gold, and each annotator's labels.

A chunk of cards at a time (keyset pagination in conversation and turn order) becomes one
Arrow table, from seven queries a chunk: the cards, their groups, states, labels,
consensus, the lead's study gold, and the type codes of the last three. Each is read whole
by db/arrow.read_table (COPY on PostgreSQL); the rows of the other tables are picked by the
range of the chunk's turn ids (a chunk's turns are a run of ids, as conversations are
imported). The rows are assembled on columns, never a Python object per card: Parquet
writes the tables as they are, CSV and JSONL write their rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Exists, OuterRef, Value
from django.db.models.fields.json import KeyTextTransform

from ..access import round1_hidden_from
from ..db.arrow import read_table
from ..models import (
    Annotation,
    Assignment,
    CardState,
    CardStatus,
    Consensus,
    Conversation,
    GoldMethod,
    Group,
    Study,
    StudyGold,
    Turn,
)
from .arrow import TIMESTAMP, code_lists, flat, iso, positions, with_codes
from .columns import (
    CONSENSUS_COLUMNS,
    CONVERSATION_COLUMNS,
    CSV_SEPARATOR,
    GOLD_CHUNK_SIZE,
    GOLD_TEXT_CHUNK_SIZE,
    MODALITY_COLUMNS,
    SPLIT_COLUMNS,
    STUDY_GOLD_COLUMNS,
    TEXT_COLUMNS,
    AxisColumn,
    arrow_schema,
    axis_columns,
    gold_columns,
    label_users,
    text_values,
)
from .writers import Progress, write

_INT, _STR = pa.int64(), pa.string()
# a label set's key for comparing the groups' sets: its sorted codes joined by a character
# no code holds
_SET_KEY_SEPARATOR = "\x1f"


def write_gold(
    study: Study,
    path: Path | str,
    fmt: str,
    round: int = 1,
    chunk_size: int | None = None,
    progress: Progress = None,
    with_text: bool = False,
    blind_for=None,
) -> int:
    """Write the gold rows to `path` as csv, jsonl or parquet; returns the number of rows
    (cards x their groups). `progress(n)`: see writers.write."""
    tables = gold_tables(study, round, chunk_size, with_text, blind_for)
    return write(tables, gold_columns(study, round, with_text), Path(path), fmt, progress)


def gold_rows(
    study: Study,
    round: int = 1,
    chunk_size: int | None = None,
    with_text: bool = False,
    blind_for=None,
) -> Iterator[dict]:
    """One dict per card and group (a card shared by several groups has one row for each),
    in conversation, turn and group order: the group's current consensus with its
    provenance (null when it has none), the card's status in the group, the card's
    study-level gold, the turn's text with `with_text`, and each of the group's annotators'
    labels in `round` under `labels_<username>` (null = no record, [] = "no smell"; another
    group's annotators stay null in this group's row). On a card `blind_for` may not see
    (round 1 under way in the group they annotate it in) every group's row leaves out the
    others' labels, the consensus and the study gold: all of them would tell round-1 labels.
    The rows of gold_tables."""
    for table in gold_tables(study, round, chunk_size, with_text, blind_for):
        yield from table.to_pylist()


def gold_tables(
    study: Study,
    round: int = 1,
    chunk_size: int | None = None,
    with_text: bool = False,
    blind_for=None,
) -> Iterator[pa.Table]:
    """gold_rows as Arrow tables of the file's schema, one a chunk of `chunk_size` cards
    (by default GOLD_CHUNK_SIZE, GOLD_TEXT_CHUNK_SIZE `with_text`)."""
    if chunk_size is None:
        chunk_size = GOLD_TEXT_CHUNK_SIZE if with_text else GOLD_CHUNK_SIZE
    export = _GoldExport(study, round, with_text, blind_for)
    for cards in _card_chunks(study, chunk_size, with_text, blind_for):
        yield export.table(cards)


_CARDS = [
    ("turn_id", _INT),
    ("conversation_id", _INT),
    ("turn", _INT),
    ("conversation", _STR),
    ("conversation_key", _STR),
    ("split_from", _STR),
    ("split_first_turn", _INT),
    ("modality", _STR),
]


def _card_chunks(study: Study, chunk_size: int, with_text: bool, blind_for) -> Iterator[pa.Table]:
    """The study's turns in conversation then turn order, `chunk_size` at a time, with
    `blind`: whether `blind_for` may not see the others' labels on it (a subquery of the
    turn query). A turn is a card once its conversation is assigned to a group: the rows
    come from the assignments (table). Keyset pagination on (conversation, index) as one
    row value, so each chunk is an index range scan however deep into the study it is
    (OFFSET would rescan everything before it); the conversation's own bound lets the
    planner start the conversations' scan there too."""
    if blind_for is None:
        blind = Value(False)
    else:
        blind = Exists(round1_hidden_from(blind_for, study).filter(pk=OuterRef("pk")))
    text = TEXT_COLUMNS if with_text else ()
    cards = (
        Turn.objects.filter(conversation__study=study)
        .annotate(blind=blind)
        .order_by("conversation_id", "index")
        .values_list(
            "pk",
            "conversation_id",
            "index",
            "conversation__external_id",
            "conversation__key",
            "conversation__split_from__key",
            "conversation__split_first_turn",
            KeyTextTransform("modality", "conversation__metadata"),
            "blind",
            *(text_values() if with_text else ()),
        )
    )
    schema = pa.schema([*_CARDS, ("blind", pa.bool_()), *((name, _STR) for name in text)])
    turn, conversation = Turn._meta.db_table, Conversation._meta.db_table
    after = [
        f'("{turn}"."conversation_id", "{turn}"."index") > (%s, %s)',
        f'"{conversation}"."id" >= %s',
    ]
    last = None
    while True:
        page = cards
        if last is not None:
            page = cards.extra(where=after, params=[*last, last[0]])
        chunk = read_table(page[:chunk_size], schema)
        if not len(chunk):
            return
        yield chunk
        if len(chunk) < chunk_size:
            return
        last = chunk["conversation_id"][-1].as_py(), chunk["turn"][-1].as_py()


class _GoldExport:
    """What every chunk of one export shares: the columns, the label columns' users, the
    groups in name order and who labels in each (annotators and judges)."""

    def __init__(self, study: Study, round: int, with_text: bool, blind_for) -> None:
        self.study, self.round, self.with_text = study, round, with_text
        self.version = str(study.taxonomy_version)
        self.blind_for_id = blind_for.pk if blind_for is not None else None
        self.schema = arrow_schema(gold_columns(study, round, with_text))
        self.users = label_users(study, round)
        self.axes = axis_columns(study)
        groups = list(
            Group.objects.filter(assignments__conversation__study=study)
            .distinct()
            .order_by("name")  # the database's collation, as a query ordering by name
            .values_list("pk", "name")
        )
        ids, names = zip(*groups, strict=True) if groups else ((), ())
        self.group_ids = pa.array(ids, _INT)
        self.group_names = pa.array(names, _STR)
        self.key_base = max(ids, default=0) + 1
        seats: dict[int, list[int]] = {}
        for through in (Group.annotators.through, Group.judges.through):
            for group_id, user_id in through.objects.filter(group_id__in=ids).values_list(
                "group_id", "user_id"
            ):
                seats.setdefault(user_id, []).append(group_id)
        # user id -> the groups they label in (annotators and judges)
        self.labels_in = {user: pa.array(groups, _INT) for user, groups in seats.items()}

    def table(self, cards: pa.Table) -> pa.Table:
        """The chunk's rows: each card once per group it is assigned to, in group order."""
        near = _span("turn_id", cards["turn_id"])
        labels, consensus, lead = self._with_type_codes(
            near,
            (Annotation, self._labels_of(near)),
            (Consensus, self._consensus(near)),
            (StudyGold, self._lead(near)),
        )
        assignments = self._assignments(cards)
        rows = self._rows(cards, assignments)
        turn_ids = cards["turn_id"].take(rows["card"])
        blind = cards["blind"].take(rows["card"])
        decided = positions(self._key(turn_ids, rows["group_id"]), consensus, "key")
        columns = {
            "study": pa.repeat(self.study.slug, len(rows)),
            "group": self.group_names.take(rows["rank"]),
            **{name: cards[name].take(rows["card"]) for name in CONVERSATION_COLUMNS},
            "turn": cards["turn"].take(rows["card"]),
            **{name: cards[name].take(rows["card"]) for name in SPLIT_COLUMNS},
            **{name: cards[name].take(rows["card"]) for name in MODALITY_COLUMNS},
        }
        # the consensus of a card hidden from `blind_for` would tell its round-1 labels
        visible = pc.if_else(blind, pa.scalar(None, decided.type), decided)
        columns.update(_consensus_columns(consensus, visible))
        for axis in self.axes:  # the consensus split by axis
            columns[axis.column] = _axis_part(columns["consensus"], axis)
        columns["status"] = self._status(near, turn_ids, rows)
        columns["label_taxonomy_version"] = pa.repeat(self.version, len(rows))
        columns.update(_study_gold(rows, turn_ids, blind, consensus["codes"], decided, lead))
        for name in TEXT_COLUMNS if self.with_text else ():
            columns[name] = cards[name].take(rows["card"])
        columns.update(self._labels(labels, cards, rows, turn_ids, assignments))
        arrays = [columns[name] for name in self.schema.names]
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _assignments(self, cards: pa.Table) -> pa.Table:
        """The chunk's conversations' groups: (conversation_id, group_id, rank in name order)."""
        table = read_table(
            Assignment.objects.filter(**_span("conversation_id", cards["conversation_id"]))
            .order_by()
            .values_list("conversation_id", "group_id"),
            pa.schema([("conversation_id", _INT), ("group_id", _INT)]),
        )
        table = table.filter(pc.is_in(table["conversation_id"], value_set=cards["conversation_id"]))
        return table.append_column("rank", pc.index_in(table["group_id"], value_set=self.group_ids))

    def _rows(self, cards: pa.Table, assignments: pa.Table) -> pa.Table:
        """(card: position in `cards`, conversation_id, group_id, rank), in card then group
        order."""
        card = pa.table(
            {"card": np.arange(len(cards)), "conversation_id": cards["conversation_id"]}
        )
        rows = card.join(assignments, "conversation_id", join_type="inner", use_threads=False)
        return rows.sort_by([("card", "ascending"), ("rank", "ascending")])

    def _status(self, near: dict, turn_ids, rows: pa.Table) -> pa.ChunkedArray:
        states = read_table(
            CardState.objects.filter(**near).values_list("turn_id", "group_id", "status"),
            pa.schema([("turn_id", _INT), ("group_id", _INT), ("status", _STR)]),
        )
        keys = self._key(states["turn_id"], states["group_id"])
        at = pc.index_in(self._key(turn_ids, rows["group_id"]), value_set=flat(keys))
        # no state row: nobody has labelled the card in this group yet
        return pc.fill_null(states["status"].take(at), str(CardStatus.OPEN))

    def _key(self, turn_ids, group_ids):
        """One int64 per (card, group), for lookups: turn id * key_base + group id."""
        return pc.add(pc.multiply(turn_ids, self.key_base), group_ids)

    def _with_type_codes(self, near: dict, *owners: tuple) -> list[pa.Table]:
        """(model, its rows) of the chunk's labels, consensus and study gold: each table
        with `codes`, its sorted type codes, from one query over the three tables linking
        them to their types. Read apart from the rows and bounded by the range of their ids
        (a join of the rows with their types makes PostgreSQL hash a whole link table for
        each chunk). A row's types never change (a revision is a new row), so the links
        of the rows read before are the same, whatever happened since."""
        links = []
        for model, table in owners:
            owner = model._meta.model_name  # the name of the link's field to its owner
            links.append(
                model.types.through.objects.filter(**{f"{owner}__{k}": v for k, v in near.items()})
                .filter(**_span(f"{owner}_id", table["id"]))
                .order_by()
                .values_list(Value(owner), f"{owner}_id", "type__code")
            )
        codes = read_table(
            links[0].union(*links[1:], all=True),
            pa.schema([("owner", _STR), ("id", _INT), ("code", _STR)]),
        )
        return [
            with_codes(table, code_lists(codes.filter(pc.equal(codes["owner"], owner))))
            for owner, table in ((model._meta.model_name, table) for model, table in owners)
        ]

    def _labels_of(self, near: dict) -> pa.Table:
        """The current labels of the chunk's cards in the round: (id, turn_id, annotator_id).
        A label waiting for its annotator's side of a split type is none yet (null)."""
        return read_table(
            Annotation.objects.current()
            .filter(round=self.round, **near)
            .filter(split_pending="")
            .order_by()
            .values_list("pk", "turn_id", "annotator_id"),
            pa.schema([("id", _INT), ("turn_id", _INT), ("annotator_id", _INT)]),
        )

    def _consensus(self, near: dict) -> pa.Table:
        """The current consensus of the chunk's cards: one row per (card, group), `key`."""
        rows = read_table(
            Consensus.objects.current()
            .filter(**near)
            .order_by()
            .values_list(
                "pk",
                "turn_id",
                "group_id",
                "method",
                "decided_by__username",
                "decided_at",
                "rationale",
                "from_round",
                "taxonomy_version__taxonomy__slug",
                "taxonomy_version__number",
            ),
            pa.schema(
                [
                    ("id", _INT),
                    ("turn_id", _INT),
                    ("group_id", _INT),
                    ("method", _STR),
                    ("decided_by", _STR),
                    ("decided_at", TIMESTAMP),
                    ("rationale", _STR),
                    ("from_round", _INT),
                    ("slug", _STR),
                    ("number", _INT),
                ]
            ),
        )
        return rows.append_column("key", self._key(rows["turn_id"], rows["group_id"]))

    def _lead(self, near: dict) -> pa.Table:
        """The lead's current study gold of the chunk's cards: one row per card."""
        return read_table(
            StudyGold.objects.current()
            .filter(**near)
            .order_by()
            .values_list("pk", "turn_id", "decided_by__username", "decided_at", "rationale"),
            pa.schema(
                [
                    ("id", _INT),
                    ("turn_id", _INT),
                    ("decided_by", _STR),
                    ("decided_at", TIMESTAMP),
                    ("rationale", _STR),
                ]
            ),
        )

    def _labels(self, labels, cards, rows, turn_ids, assignments) -> dict:
        """labels_<username>: the user's current labels on the card in the round; null for
        someone who labels the conversation in another group, and on a card hidden from
        `blind_for` for everyone but them."""
        if self.blind_for_id is not None:
            blind = cards["blind"].take(positions(labels["turn_id"], cards, "turn_id"))
            others = pc.not_equal(labels["annotator_id"], self.blind_for_id)
            labels = labels.filter(pc.invert(pc.and_kleene(blind, others)))
        columns = {}
        for username, user_id in self.users.items():
            mine = labels.filter(pc.equal(labels["annotator_id"], user_id))
            codes = mine["codes"].take(positions(turn_ids, mine, "turn_id"))
            outside = self._labels_elsewhere(user_id, rows, assignments)
            if outside is not None:
                codes = pc.if_else(outside, pa.scalar(None, codes.type), codes)
            columns[f"labels_{username}"] = codes
        return columns

    def _labels_elsewhere(self, user_id: int, rows: pa.Table, assignments: pa.Table):
        """Per row, whether the user labels its conversation in another of its groups (their
        labels belong to that group's row), or None when they label in no group."""
        groups = self.labels_in.get(user_id)
        if groups is None:
            return None
        theirs = assignments.filter(pc.is_in(assignments["group_id"], value_set=groups))
        counts = pc.value_counts(theirs["conversation_id"])
        n = counts.field("counts").take(
            pc.index_in(rows["conversation_id"], value_set=counts.field("values"))
        )
        here = pc.cast(pc.is_in(rows["group_id"], value_set=groups), _INT)
        return pc.greater(pc.subtract(pc.fill_null(n, 0), here), 0)


def _axis_part(sets, axis: AxisColumn) -> pa.Array:
    """Each label set's codes of one axis (a null set stays null): a list of them for a
    multi-select axis, the one code (null for none) for a single-select one."""
    sets = sets.combine_chunks() if isinstance(sets, pa.ChunkedArray) else sets
    codes = pc.list_flatten(sets)
    owner = pc.list_parent_indices(sets).to_numpy()
    keep = pc.is_in(codes, value_set=pa.array(sorted(axis.codes), _STR)).to_numpy(
        zero_copy_only=False
    )
    kept, owner = codes.filter(pa.array(keep)), owner[keep]
    counts = np.bincount(owner, minlength=len(sets))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    if not axis.single:
        return pa.ListArray.from_arrays(
            pa.array(offsets), kept, type=pa.list_(_STR), mask=sets.is_null()
        )
    # a pick-one axis holds one code (check_selection); several would be a bad import,
    # shown joined rather than hidden (AxisColumn.pick)
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array(offsets), kept, type=pa.list_(_STR)), CSV_SEPARATOR
    )
    return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, _STR))


def _study_gold(rows, turn_ids, blind, sets, decided, lead: pa.Table) -> dict:
    """The study-level gold columns of each row (models.study_gold_of on columns): the
    lead's decision; else, once every group of the card has a consensus, their common set
    (groups_agree) or "pending" where they differ. Null on a blind card."""
    # each row's consensus set as a key, the same for the same set: -1 for none
    keys = pc.binary_join(sets.take(decided), _SET_KEY_SEPARATOR).combine_chunks()
    key = pc.fill_null(pc.dictionary_encode(keys).indices, -1)
    agree, pending, first = _groups_agree(rows["card"].to_numpy(), key.to_numpy())
    led = positions(turn_ids, lead, "turn_id")
    visible = pc.invert(blind)
    by_lead = pc.and_(pc.is_valid(led), visible)
    by_groups = pc.and_(pc.is_null(led), visible)
    agree, pending = pc.and_(agree, by_groups), pc.and_(pending, by_groups)
    led = pc.if_else(by_lead, led, pa.scalar(None, led.type))
    agreed_set = sets.take(decided.take(pa.array(first)))
    method = pc.if_else(by_lead, GoldMethod.LEAD.value, pa.scalar(None, _STR))
    method = pc.if_else(agree, GoldMethod.GROUPS_AGREE.value, method)
    method = pc.if_else(pending, "pending", method)
    values = [
        pc.if_else(agree, agreed_set, lead["codes"].take(led)),
        method,
        lead["decided_by"].take(led),
        iso(lead["decided_at"].take(led)),
        lead["rationale"].take(led),
    ]
    return dict(zip(STUDY_GOLD_COLUMNS, values, strict=True))


def _consensus_columns(consensus: pa.Table, at) -> dict:
    """consensus ... taxonomy_version of the rows whose consensus is at `at` (null: none)."""
    rationale = consensus["rationale"].take(at)
    slug, number = consensus["slug"].take(at), consensus["number"].take(at)
    values = [
        consensus["codes"].take(at),
        consensus["method"].take(at),
        consensus["decided_by"].take(at),
        iso(consensus["decided_at"].take(at)),
        # only a moderator gives one; "" (unanimous, discussion) is no rationale: null
        pc.if_else(pc.equal(rationale, ""), pa.scalar(None, _STR), rationale),
        consensus["from_round"].take(at),
        pc.binary_join_element_wise(slug, pc.cast(number, _STR), " v"),
    ]
    return dict(zip(CONSENSUS_COLUMNS, values, strict=True))


def _span(field: str, ids) -> dict:
    """The filter of `field` between the least and the greatest of `ids` (nothing for no
    id: the query still runs, so that a chunk always makes the same queries)."""
    low_high = pc.min_max(ids)
    low, high = low_high["min"].as_py(), low_high["max"].as_py()
    if low is None:
        low, high = 1, 0
    return {f"{field}__gte": low, f"{field}__lte": high}


def _groups_agree(card: np.ndarray, key: np.ndarray):
    """Per row (rows in card order, `key` a card-group's consensus set, -1 for none):
    whether every group of the card has a consensus and all are the same set, whether they
    all have one and differ, and the position of the card's first row."""
    if not len(card):
        return pa.array([], pa.bool_()), pa.array([], pa.bool_()), np.array([], np.int64)
    starts = np.flatnonzero(np.r_[True, card[1:] != card[:-1]])
    lo, hi = np.minimum.reduceat(key, starts), np.maximum.reduceat(key, starts)
    run = np.cumsum(np.r_[True, card[1:] != card[:-1]]) - 1
    decided = lo >= 0
    return pa.array((decided & (lo == hi))[run]), pa.array((decided & (lo != hi))[run]), starts[run]
