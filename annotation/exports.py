"""Gold-label and raw-annotation exports (DESIGN.md: `export_gold`). Plain functions: the
command and the export job only call them.

Both exports stream: cards (or annotations) are read in chunks with a fixed number of queries
per chunk, and CSV/JSONL rows are written as they come, so a study of any size never sits in
memory at once (Label Studio's lesson: 50k-record exports that time out). The file is written
next to its target under a temporary name and moved into place only when complete, so a
failed export never leaves a partial file that looks finished.

File encodings (also in `export_gold --help`):
- JSONL: one object a line; a label set is a sorted list of type codes, `[]` is "no smell",
  `null` is "no record" (nobody labelled / no consensus yet).
- CSV: a label set is its codes joined with "|", `-` for the empty set ("no smell"), and an
  empty cell for null; every other null is an empty cell too.
- Parquet: label sets are list<string> columns (null vs [] kept); integers are nullable int64,
  and the file's pandas metadata makes `pandas.read_parquet` read them as "Int64" (a null
  would otherwise turn `from_round` or `confidence` into float64).
In CSV and JSONL an integer is always written as one (`2`, never `2.0`); pandas' own
`read_csv` / `read_json` still guess float64 for a column with empty cells, so read them with
`dtype={"from_round": "Int64"}` (`round`, `confidence` likewise).

Optional columns: `with_text` adds the turn's `user_text` and `reply_text`. Blindness:
`blind_for=user` leaves out what that user may not see (access.round1_hidden_from): other
annotators' labels on the open cards of the groups they annotate (blank cells in the gold
file, rows left out of the raw one). The export job is always made blind for whoever started
it; the command line only with --blind-for.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q, Value

from .access import round1_hidden_from, round1_hidden_q
from .models import (
    Annotation,
    Assignment,
    CardState,
    CardStatus,
    Consensus,
    Group,
    Study,
    StudyGold,
    Turn,
    study_gold_of,
)

EXPORT_FORMATS = ("csv", "jsonl", "parquet")
CHUNK_SIZE = 2000
CSV_EMPTY_SET = "-"
CSV_SEPARATOR = "|"

GOLD_COLUMNS = (
    "study",
    "group",
    "conversation",
    "turn",
    "consensus",
    "method",
    "decided_by",
    "decided_at",
    "rationale",
    "from_round",
    "taxonomy_version",
    "status",
    # the card's study-level gold, the same on each of its groups' rows (models.StudyGold):
    # the groups' common set (groups_agree; a card of one group: its consensus), the lead's
    # decision where they differ (lead), "pending" while the lead has not decided
    "study_gold",
    "study_gold_method",
    "study_gold_decided_by",
    "study_gold_decided_at",
    "study_gold_rationale",
)
# "consensus" to "taxonomy_version": all null on a card with no current consensus
_CONSENSUS_COLUMNS = GOLD_COLUMNS[GOLD_COLUMNS.index("consensus") : GOLD_COLUMNS.index("status")]
# with_text: the card's text, after the fixed columns (before the labels_<username> ones)
TEXT_COLUMNS = ("user_text", "reply_text")
RAW_COLUMNS = (
    "study",
    "group",
    "conversation",
    "turn",
    "round",
    "annotator",
    "labels",
    "is_current",
    "source",
    "created_at",
    "note",
    "evidence",
    "confidence",
    "taxonomy_version",
)
_INT_COLUMNS = {"turn", "from_round", "round", "confidence"}
_BOOL_COLUMNS = {"is_current"}


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def gold_columns(study: Study, round: int = 1, with_text: bool = False) -> list[str]:
    text = list(TEXT_COLUMNS) if with_text else []
    return [*GOLD_COLUMNS, *text, *label_columns(study, round)]


def raw_columns(with_text: bool = False) -> list[str]:
    return [*RAW_COLUMNS, *(TEXT_COLUMNS if with_text else ())]


def annotates_in(user, study: Study) -> bool:
    """Whether `user` is an annotator of one of the study's groups."""
    return Group.objects.filter(study=study, annotators=user).exists()


def may_download(user, study: Study, result: dict) -> bool:
    """Whether `user` may have the file of an export job whose result is `result`: a user who
    annotates in the study only a file made blind for them (the lead who does not annotate
    may have any). Asked at download time, so joining a group later closes old files."""
    return not annotates_in(user, study) or result.get("blind_for_id") == user.pk


def label_columns(study: Study, round: int = 1) -> list[str]:
    """One `labels_<username>` column per annotator of the study: the groups' annotators
    and anyone who labelled a card in `round` (someone since removed from a group keeps
    their column: their labels are part of the record)."""
    User = get_user_model()
    in_groups = User.objects.filter(annotation_groups__study=study).values_list(
        "username", flat=True
    )
    labelled = (
        Annotation.objects.filter(turn__conversation__study=study, round=round)
        .values_list("annotator__username", flat=True)
        .order_by()  # the model's ordering by id would make DISTINCT one row per annotation
        .distinct()
    )
    return [f"labels_{name}" for name in sorted(set(in_groups) | set(labelled))]


def _gold_cards(study: Study, with_text: bool = False, blind_for=None):
    """The study's cards (turns of conversations assigned to a group) as plain values, in
    conversation then turn order; one row per turn (its groups come per chunk); the texts
    last, and only when asked (they are the bulk)."""
    assigned = Assignment.objects.filter(conversation_id=OuterRef("conversation_id"))
    if blind_for is None:
        blind = Value(False)
    else:
        # whether `blind_for` may not see the others' labels on it: a subquery of the card
        # query, no query more
        blind = Exists(round1_hidden_from(blind_for, study).filter(pk=OuterRef("pk")))
    return (
        Turn.objects.filter(conversation__study=study)
        .filter(Exists(assigned))
        .annotate(blind=blind)
        .order_by("conversation_id", "index")
        .values_list(
            "pk",
            "conversation_id",
            "index",
            "conversation__external_id",
            "blind",
            *(TEXT_COLUMNS if with_text else ()),
        )
    )


class _Seats:
    """Who labels which conversation in which group, for a chunk of conversations: the
    groups of each conversation (by name) and each group's labellers (annotators, judges)."""

    def __init__(self, conversation_ids: Iterable[int]) -> None:
        rows = (
            Assignment.objects.filter(conversation_id__in=set(conversation_ids))
            .order_by("group__name")
            .values_list("conversation_id", "group_id", "group__name")
        )
        self.groups: dict[int, list[tuple[int, str]]] = {}
        for conversation_id, group_id, name in rows:
            self.groups.setdefault(conversation_id, []).append((group_id, name))
        ids = {g for groups in self.groups.values() for g, _ in groups}
        self.labellers: dict[int, set[str]] = {g: set() for g in ids}
        seats = [
            through.objects.filter(group_id__in=ids).values_list("group_id", "user__username")
            for through in (Group.annotators.through, Group.judges.through)
        ]
        for group_id, username in seats[0].union(seats[1], all=True):
            self.labellers[group_id].add(username)

    def outsiders(self, conversation_id: int, group_id: int) -> set[str]:
        """Who labels the conversation in another group: not part of this group's row."""
        return {
            u
            for g, _ in self.groups.get(conversation_id, [])
            if g != group_id
            for u in self.labellers[g]
        }

    def group_of(self, conversation_id: int, username: str) -> str | None:
        """The group in which `username` labels the conversation; a conversation of one
        group answers that group for anyone (someone since removed from it)."""
        groups = self.groups.get(conversation_id, [])
        for group_id, name in groups:
            if username in self.labellers[group_id]:
                return name
        return groups[0][1] if len(groups) == 1 else None


def _card_chunks(
    study: Study, chunk_size: int, with_text: bool = False, blind_for=None
) -> Iterator[list[tuple]]:
    """Keyset pagination on (conversation, index) as one row value, so each chunk is an
    index range scan however deep into the study it is (OFFSET, or an OR of two ranges,
    would rescan everything before it)."""
    cards = _gold_cards(study, with_text, blind_for)
    last = None
    while True:
        page = cards
        if last is not None:
            table = Turn._meta.db_table
            page = cards.extra(
                where=[f'("{table}"."conversation_id", "{table}"."index") > (%s, %s)'],
                params=list(last),
            )
        chunk = list(page[:chunk_size])
        if not chunk:
            return
        yield chunk
        if len(chunk) < chunk_size:
            return
        last = chunk[-1][1], chunk[-1][2]


def _sets_by_turn(rows: Iterable[tuple]) -> dict:
    """{(turn id, *key): sorted codes} from (turn id, *key, code) rows of a LEFT JOIN on the
    types: a row with a null code is an empty set ("no smell"), not a missing one."""
    sets: dict = {}
    for *key, code in rows:
        codes = sets.setdefault(tuple(key), [])
        if code is not None:
            codes.append(code)
    for codes in sets.values():
        codes.sort()
    return sets


def gold_rows(
    study: Study,
    round: int = 1,
    chunk_size: int = CHUNK_SIZE,
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
    Plain values, a fixed number of queries a chunk: no model instance is built per card."""
    columns = label_columns(study, round)
    for chunk in _card_chunks(study, chunk_size, with_text, blind_for):
        ids = [card[0] for card in chunk]
        seats = _Seats(card[1] for card in chunk)
        states = dict(
            ((turn_id, group_id), status)
            for turn_id, group_id, status in CardState.objects.filter(turn_id__in=ids).values_list(
                "turn_id", "group_id", "status"
            )
        )
        annotations = Annotation.objects.current().filter(turn_id__in=ids, round=round)
        if blind_for is not None:
            # a subquery of the labels query (no query more), bounded to the chunk's cards
            hidden = round1_hidden_from(blind_for, study).filter(pk__in=ids)
            annotations = annotations.exclude(Q(turn__in=hidden) & ~Q(annotator=blind_for))
        labels = _sets_by_turn(
            annotations.values_list("turn_id", "annotator__username", "types__code")
        )
        by_turn: dict[int, dict] = {}
        for (turn_id, username), codes in labels.items():
            by_turn.setdefault(turn_id, {})[f"labels_{username}"] = codes
        consensus = _sets_by_turn(
            Consensus.objects.current()
            .filter(turn_id__in=ids)
            .values_list(
                "turn_id",
                "group_id",
                "method",
                "decided_by__username",
                "decided_at",
                "rationale",
                "from_round",
                "taxonomy_version__taxonomy__slug",
                "taxonomy_version__number",
                "types__code",
            )
        )
        decided = {(key[0], key[1]): (key, codes) for key, codes in consensus.items()}
        lead = _lead_gold(ids)
        for turn_id, conversation_id, index, external_id, blind, *text in chunk:
            groups = seats.groups.get(conversation_id, [])
            sets = [decided[(turn_id, g)][1] for g, _ in groups if (turn_id, g) in decided]
            gold = _study_gold_columns(sets, len(groups), lead.get(turn_id))
            for group_id, group in groups:
                outsiders = {f"labels_{u}" for u in seats.outsiders(conversation_id, group_id)}
                decision = None if blind else decided.get((turn_id, group_id))
                row = {
                    "study": study.slug,
                    "group": group,
                    "conversation": external_id,
                    "turn": index,
                    **_consensus_columns(decision),
                    # no state row: nobody has labelled the card in this group yet
                    "status": states.get((turn_id, group_id)) or str(CardStatus.OPEN),
                }
                row.update(_study_gold_columns([], 1, None) if blind else gold)
                row.update(dict(zip(TEXT_COLUMNS, text, strict=False)))
                row.update(dict.fromkeys(columns))
                labels = by_turn.get(turn_id, {})
                row.update({k: v for k, v in labels.items() if k not in outsiders})
                yield row


def _lead_gold(ids: list[int]) -> dict[int, tuple]:
    """{turn id: (codes, decided_by, decided_at, rationale)} of the lead's current study gold."""
    rows = _sets_by_turn(
        StudyGold.objects.current()
        .filter(turn_id__in=ids)
        .values_list("turn_id", "decided_by__username", "decided_at", "rationale", "types__code")
    )
    return {key[0]: (codes, *key[1:]) for key, codes in rows.items()}


def _study_gold_columns(sets: list[list[str]], n_groups: int, lead: tuple | None) -> dict:
    codes, method = study_gold_of(
        [frozenset(s) for s in sets], n_groups, frozenset(lead[0]) if lead else None
    )
    decided_by, decided_at, rationale = lead[1:] if lead else (None, None, None)
    return {
        "study_gold": sorted(codes) if codes is not None else None,
        "study_gold_method": str(method) if method else None,
        "study_gold_decided_by": decided_by,
        "study_gold_decided_at": _iso(decided_at),
        "study_gold_rationale": rationale,
    }


def _consensus_columns(decision: tuple | None) -> dict:
    if decision is None:
        return dict.fromkeys(_CONSENSUS_COLUMNS)
    (_, _, method, decided_by, decided_at, rationale, from_round, slug, number), codes = decision
    return {
        "consensus": codes,
        "method": method,
        "decided_by": decided_by,
        "decided_at": _iso(decided_at),
        # only a moderator gives one; "" (unanimous, discussion) is no rationale: null
        "rationale": rationale or None,
        "from_round": from_round,
        "taxonomy_version": f"{slug} v{number}",
    }


def raw_rows(
    study: Study,
    round: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    with_text: bool = False,
    blind_for=None,
) -> Iterator[dict]:
    """Every annotation row of the study, all revisions, in the order they were recorded
    (`round` limits it to one round; `blind_for` leaves out the rows that user may not
    see). Plain values, two queries a chunk."""
    annotations = Annotation.objects.filter(turn__conversation__study=study).order_by("pk")
    if round is not None:
        annotations = annotations.filter(round=round)
    if blind_for is not None:
        annotations = annotations.exclude(round1_hidden_q(blind_for, study))
    fields = (
        "pk",
        "turn__conversation_id",
        "turn__conversation__external_id",
        "turn__index",
        "round",
        "annotator__username",
        "is_current",
        "source",
        "created_at",
        "note",
        "evidence",
        "confidence",
        "taxonomy_version__taxonomy__slug",
        "taxonomy_version__number",
        *(f"turn__{name}" for name in TEXT_COLUMNS if with_text),
    )
    last_pk = 0
    while True:
        chunk = list(annotations.filter(pk__gt=last_pk).values_list(*fields)[:chunk_size])
        labels = _sets_by_turn(
            Annotation.types.through.objects.filter(
                annotation_id__in=[row[0] for row in chunk]
            ).values_list("annotation_id", "type__code")
        )
        seats = _Seats(row[1] for row in chunk)
        for pk, conversation_id, external_id, index, rnd, username, *rest in chunk:
            is_current, source, created_at, note, evidence, confidence, slug, number = rest[:8]
            yield {
                "study": study.slug,
                "group": seats.group_of(conversation_id, username),
                "conversation": external_id,
                "turn": index,
                "round": rnd,
                "annotator": username,
                "labels": labels.get((pk,), []),
                "is_current": is_current,
                "source": source,
                "created_at": _iso(created_at),
                "note": note,
                "evidence": evidence,
                "confidence": confidence,
                "taxonomy_version": f"{slug} v{number}",
                **dict(zip(TEXT_COLUMNS, rest[8:], strict=False)),
            }
        if len(chunk) < chunk_size:
            return
        last_pk = chunk[-1][0]


def write_gold(
    study: Study,
    path: Path | str,
    fmt: str,
    round: int = 1,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[int], None] | None = None,
    with_text: bool = False,
    blind_for=None,
) -> int:
    """Write `gold_rows` to `path` as csv, jsonl or parquet; returns the number of cards.
    `progress(n)` is called after each row is handed to the writer (the export job's bar)."""
    columns = gold_columns(study, round, with_text)
    rows = gold_rows(
        study, round=round, chunk_size=chunk_size, with_text=with_text, blind_for=blind_for
    )
    return _write(_counted(rows, progress), columns, Path(path), fmt, chunk_size)


def write_raw(
    study: Study,
    path: Path | str,
    fmt: str,
    round: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[int], None] | None = None,
    with_text: bool = False,
    blind_for=None,
) -> int:
    """Write `raw_rows` to `path` as csv, jsonl or parquet; returns the number of rows."""
    rows = raw_rows(
        study, round=round, chunk_size=chunk_size, with_text=with_text, blind_for=blind_for
    )
    columns = raw_columns(with_text)
    return _write(_counted(rows, progress), columns, Path(path), fmt, chunk_size)


def _counted(rows: Iterable[dict], progress: Callable[[int], None] | None) -> Iterable[dict]:
    if progress is None:
        return rows

    def counting() -> Iterator[dict]:
        for n, row in enumerate(rows, 1):
            yield row
            progress(n)

    return counting()


def _write(rows: Iterable[dict], columns: list[str], path: Path, fmt: str, chunk_size: int) -> int:
    if fmt not in WRITERS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
    writer = WRITERS[fmt]
    # Same directory as the target, so os.replace is an atomic rename on one filesystem.
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    try:
        n = writer(rows, columns, Path(tmp_name), chunk_size)
        os.chmod(tmp_name, 0o644)  # mkstemp makes it owner-only; an export is to be shared
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return n


def _write_jsonl(rows: Iterable[dict], columns: list[str], path: Path, chunk_size: int) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def _is_label_column(name: str) -> bool:
    return name in ("consensus", "labels", "study_gold") or name.startswith("labels_")


def _csv_cell(name: str, value) -> str:
    if value is None:
        return ""
    if _is_label_column(name):
        return CSV_SEPARATOR.join(value) if value else CSV_EMPTY_SET
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _write_csv(rows: Iterable[dict], columns: list[str], path: Path, chunk_size: int) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_cell(name, row[name]) for name in columns])
            n += 1
    return n


def _pandas_metadata(columns: list[str]) -> dict[bytes, bytes]:
    """pyarrow gives pandas float64 for an int64 column with a null (NaN), unless the
    file's pandas metadata names the nullable "Int64" dtype for it; only those columns are
    described, pandas takes the others from their Arrow types."""
    import pandas as pd

    described = [
        {
            "name": name,
            "field_name": name,
            "pandas_type": "int64",
            "numpy_type": "Int64",
            "metadata": None,
        }
        for name in columns
        if name in _INT_COLUMNS
    ]
    meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": described,
        "creator": {"library": "cardsort"},
        "pandas_version": pd.__version__,
    }
    return {b"pandas": json.dumps(meta).encode()}


def _parquet_schema(columns: list[str]):
    import pyarrow as pa

    def field_type(name: str):
        if _is_label_column(name):
            return pa.list_(pa.string())
        if name in _INT_COLUMNS:
            return pa.int64()
        if name in _BOOL_COLUMNS:
            return pa.bool_()
        return pa.string()

    fields = [(name, field_type(name)) for name in columns]
    return pa.schema(fields, metadata=_pandas_metadata(columns))


def _write_parquet(rows: Iterable[dict], columns: list[str], path: Path, chunk_size: int) -> int:
    # imported here: pyarrow is heavy and only this format needs it
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _parquet_schema(columns)
    n = 0
    iterator = iter(rows)
    with pq.ParquetWriter(path, schema) as writer:
        # one row group per chunk keeps memory to a chunk's worth of rows
        while batch := list(islice(iterator, chunk_size)):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


WRITERS: dict[str, Callable[[Iterable[dict], list[str], Path, int], int]] = {
    "csv": _write_csv,
    "jsonl": _write_jsonl,
    "parquet": _write_parquet,
}
