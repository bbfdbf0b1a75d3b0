"""The agreement report of a study, straight from the database (AGREEMENT.md).

    load_records(study, round=1) -> {axis code: (records, codes, consensus)}
    compute_study_report(study, round=1, n_boot=1000, seed=0) -> dict (JSON-able)
    data_stamp(study) -> dict

The job, the `agreement` command and the API all go through `compute_study_report`, so they
give the same JSON. Loading never builds a model instance: one streamed SQL query over the
current annotations of the round left-joined to their types (one row per annotation and
type; a row with no type for "no smell"), one over the current consensus, both read in
chunks into integer arrays. Label sets are built per distinct bitmask (a few hundred at
most), not per record, so a million cards cost a few numpy passes.

Records: card = turn id, annotator = username, group = the name of the group in which the
annotator labels the card's conversation. A conversation may be assigned to several groups
(a calibration set, an overlap share); one person labels it in one of them only
(Group.check_seat), so every record has one group. A conversation of a single group gives
that group to anyone's record (someone since removed from it); a record of nobody seated,
on a shared conversation, has no group. Pairs stay inside groups; the study-wide measures
(Krippendorff, Fleiss) span every annotator who rated the card.

Consensus: each group has its own on a shared card. The report's `consensus` mapping (for
`prevalence` and `versus_consensus`) is the study-level gold (models.study_gold_of); the
axis's `between_groups` compares the groups' consensus labels on the cards several groups
decided: Cohen's kappa on sets and per label for each pair of groups (the pair keys of the
report, a group standing for an annotator).

An annotation with no type of an axis is the empty set on that axis ("no smell" there).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Max, Q
from django.utils import timezone

from taxonomy.models import Type

from ..models import (
    Annotation,
    Assignment,
    Consensus,
    Conversation,
    Group,
    Study,
    StudyGold,
    Turn,
    study_gold_of,
)
from .extras import build_extras
from .stats import agreement_report, versus_reference

CHUNK_ROWS = 50_000
NO_GROUP = "(no group)"

Progress = Callable[[int, int, str], None]


def _tables() -> dict[str, str]:
    return {
        "annotation": Annotation._meta.db_table,
        "annotation_types": Annotation.types.through._meta.db_table,
        "consensus": Consensus._meta.db_table,
        "consensus_types": Consensus.types.through._meta.db_table,
        "turn": Turn._meta.db_table,
        "conversation": Conversation._meta.db_table,
        "group": Group._meta.db_table,
        "assignment": Assignment._meta.db_table,
        "group_annotators": Group.annotators.through._meta.db_table,
        "group_judges": Group.judges.through._meta.db_table,
        "study_gold": StudyGold._meta.db_table,
        "study_gold_types": StudyGold.types.through._meta.db_table,
    }


def _records_sql() -> str:
    # 0 stands for NULL (ids start at 1): an annotation without a type ("no smell")
    return """
        SELECT a.id, a.turn_id, a.annotator_id, t.conversation_id, COALESCE(at.type_id, 0)
        FROM {annotation} a
        JOIN {turn} t ON t.id = a.turn_id
        JOIN {conversation} c ON c.id = t.conversation_id
        LEFT JOIN {annotation_types} at ON at.annotation_id = a.id
        WHERE c.study_id = %s AND a.round = %s AND a.is_current = %s
    """.format(**_tables())


def _seats_sql() -> str:
    # (conversation, user, group): who labels which conversation in which group; one row
    # per assignment and seat, far fewer than the annotations
    return """
        SELECT s.conversation_id, ga.user_id, s.group_id
        FROM {assignment} s
        JOIN {group} g ON g.id = s.group_id
        JOIN {group_annotators} ga ON ga.group_id = s.group_id
        WHERE g.study_id = %s
        UNION ALL
        SELECT s.conversation_id, gj.user_id, s.group_id
        FROM {assignment} s
        JOIN {group} g ON g.id = s.group_id
        JOIN {group_judges} gj ON gj.group_id = s.group_id
        WHERE g.study_id = %s
    """.format(**_tables())


def _assignments_sql() -> str:
    return """
        SELECT s.conversation_id, s.group_id
        FROM {assignment} s
        JOIN {group} g ON g.id = s.group_id
        WHERE g.study_id = %s
    """.format(**_tables())


def _consensus_sql() -> str:
    # the consensus row carries its group, so the study is one join away (no turn scan)
    return """
        SELECT k.id, k.turn_id, k.group_id, t.conversation_id, COALESCE(kt.type_id, 0)
        FROM {consensus} k
        JOIN {group} g ON g.id = k.group_id
        JOIN {turn} t ON t.id = k.turn_id
        LEFT JOIN {consensus_types} kt ON kt.consensus_id = k.id
        WHERE g.study_id = %s AND k.is_current = %s
    """.format(**_tables())


def _study_gold_sql() -> str:
    return """
        SELECT k.id, k.turn_id, COALESCE(kt.type_id, 0)
        FROM {study_gold} k
        LEFT JOIN {study_gold_types} kt ON kt.studygold_id = k.id
        WHERE k.study_id = %s AND k.is_current = %s
    """.format(**_tables())


def _fetch_columns(sql: str, params: list, n_columns: int) -> np.ndarray:
    """(n_columns, n_rows) int64 array of an all-integer query, read in chunks: a server-side
    cursor on PostgreSQL, so neither the driver nor Python holds the rows as tuples at once."""
    chunks = []
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            chunks.append(np.array(rows, dtype=np.int64).reshape(-1, n_columns))
    if not chunks:
        return np.zeros((n_columns, 0), dtype=np.int64)
    return np.concatenate(chunks).T


def axis_codes(study: Study) -> dict[str, list[str]]:
    """{axis code: type codes} of the study's taxonomy version, in the taxonomy's order."""
    out: dict[str, list[str]] = {}
    types = Type.objects.filter(axis__version_id=study.taxonomy_version_id).order_by(
        "axis__order", "axis_id", "category__order", "order", "id"
    )
    for axis, code in types.values_list("axis__code", "code"):
        out.setdefault(axis, []).append(code)
    for axis in study.taxonomy_version.axes.values_list("code", flat=True):
        out.setdefault(axis, [])  # an axis with no type yet still gets its (empty) report
    return out


class _Labels:
    """Type id -> (axis, code) for the types the rows use, and label sets per bitmask."""

    def __init__(self, codes: dict[str, list[str]], type_ids: np.ndarray) -> None:
        self.codes = {axis: list(c) for axis, c in codes.items()}
        used = [int(t) for t in type_ids if t]
        self.type_axis: dict[int, tuple[str, str]] = {}
        for pk, code, axis in Type.objects.filter(pk__in=used).values_list(
            "pk", "code", "axis__code"
        ):
            self.type_axis[pk] = (axis, code)
            # A type of another taxonomy version (labels given before a new version) whose
            # code this version dropped: keep it as a label of the axis rather than fail.
            axis_list = self.codes.setdefault(axis, [])
            if code not in axis_list:
                axis_list.append(code)

    def masks(self, owner: np.ndarray, n_owners: int, types: np.ndarray, axis: str) -> np.ndarray:
        """uint64 bitmask per owner (annotation or consensus) of its types on `axis`."""
        unique_types, inverse = np.unique(types, return_inverse=True)
        position = {c: i for i, c in enumerate(self.codes[axis])}
        bits = np.zeros(len(unique_types), dtype=np.uint64)
        for i, type_id in enumerate(unique_types):
            found = self.type_axis.get(int(type_id))
            if found is not None and found[0] == axis:
                bits[i] = np.uint64(1) << np.uint64(position[found[1]])
        masks = np.zeros(n_owners, dtype=np.uint64)
        np.bitwise_or.at(masks, owner, bits[inverse])
        return masks

    def sets(self, masks: np.ndarray, axis: str) -> np.ndarray:
        """Object array of frozensets: one frozenset per distinct mask, shared by reference."""
        inverse, distinct = pd.factorize(masks)
        codes = self.codes[axis]
        by_mask = np.empty(len(distinct), dtype=object)
        by_mask[:] = [
            frozenset(c for i, c in enumerate(codes) if int(m) >> i & 1) for m in distinct
        ]
        return by_mask[inverse]


def _names(model, ids: np.ndarray, field: str) -> np.ndarray:
    """Object array: position i holds the `field` of object ids[i]; 0 -> None."""
    inverse, unique = pd.factorize(ids)
    rows = model.objects.filter(pk__in=[int(i) for i in unique if i]).values_list("pk", field)
    found = dict(rows)
    names = np.empty(len(unique), dtype=object)
    names[:] = [found.get(int(i)) for i in unique]
    return names[inverse]


def _collapse(ids: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows of a LEFT JOIN on the types (one per owner and type) -> the owner index of each
    row, and each column's value once per owner."""
    owner, distinct = pd.factorize(ids)
    out = []
    for column in columns:
        values = np.zeros(len(distinct), dtype=np.int64)
        values[owner] = column
        out.append(values)
    return owner, out


def _record_groups(study: Study, conversation: np.ndarray, annotator: np.ndarray) -> np.ndarray:
    """The group id of each record (0: none): the group in which the annotator labels the
    conversation; on a conversation of one group, that group for anyone."""
    s_conv, s_user, s_group = _fetch_columns(_seats_sql(), [study.pk, study.pk], 3)
    a_conv, a_group = _fetch_columns(_assignments_sql(), [study.pk], 2)
    seats = (
        pd.DataFrame({"conversation": s_conv, "annotator": s_user, "group": s_group})
        .sort_values("group")
        .drop_duplicates(["conversation", "annotator"])
    )
    records = pd.DataFrame({"conversation": conversation, "annotator": annotator})
    group = records.merge(seats, on=["conversation", "annotator"], how="left")["group"]
    per_conversation = pd.Series(a_group).groupby(a_conv)
    sole = per_conversation.first()[per_conversation.size() == 1]
    group = group.fillna(pd.Series(conversation).map(sole))
    return group.fillna(0).to_numpy(dtype=np.int64)


class _Consensus:
    """The current consensus rows of a study (one per card and group) and the lead's
    study-level gold, as owner arrays for `_Labels.masks`."""

    def __init__(self, study: Study) -> None:
        k_id, k_turn, k_group, k_conv, self.type_id = _fetch_columns(
            _consensus_sql(), [study.pk, True], 5
        )
        self.owner, (self.card, self.group, conversation) = _collapse(k_id, k_turn, k_group, k_conv)
        g_id, g_turn, self.gold_type = _fetch_columns(_study_gold_sql(), [study.pk, True], 3)
        self.gold_owner, (self.gold_card,) = _collapse(g_id, g_turn)
        a_conv, _ = _fetch_columns(_assignments_sql(), [study.pk], 2)
        groups_per_conversation = pd.Series(a_conv).value_counts()
        self.n_groups = pd.Series(conversation).map(groups_per_conversation).fillna(0).to_numpy()
        self.group_names = _names(Group, self.group, "name")

    def type_ids(self) -> np.ndarray:
        return np.concatenate([self.type_id, self.gold_type])

    def study_gold(self, labels: _Labels, axis: str) -> tuple[dict, np.ndarray]:
        """({card: frozenset} of the study-level gold, the groups' consensus sets)."""
        sets = labels.sets(labels.masks(self.owner, len(self.card), self.type_id, axis), axis)
        gold_sets = labels.sets(
            labels.masks(self.gold_owner, len(self.gold_card), self.gold_type, axis), axis
        )
        lead = dict(zip(self.gold_card.tolist(), gold_sets.tolist(), strict=True))
        by_card: dict[int, list[frozenset]] = {}
        n_groups: dict[int, int] = {}
        for card, labels_, n in zip(self.card.tolist(), sets.tolist(), self.n_groups, strict=True):
            by_card.setdefault(card, []).append(labels_)
            n_groups[card] = int(n)
        out = {}
        for card in by_card.keys() | lead.keys():
            gold, _ = study_gold_of(by_card.get(card, []), n_groups.get(card, 0), lead.get(card))
            if gold is not None:
                out[card] = gold
        return out, sets

    def between_groups(self, sets: np.ndarray) -> pd.DataFrame:
        """The groups' consensus on cards that several groups decided, as records with a
        group in the annotator's place."""
        frame = pd.DataFrame(
            {"card": self.card, "annotator": self.group_names, "group": "groups", "labels": sets}
        )
        shared = frame["card"].map(frame["card"].value_counts()) >= 2
        return frame[shared.to_numpy()]


def load_records(study: Study, round: int = 1) -> dict[str, tuple[pd.DataFrame, list, dict]]:
    """{axis code: (records, codes, consensus)} for `agreement_reports`: the current labels of
    `round`, one record per (card, annotator), and the study-level gold {card: frozenset}."""
    return {axis: spec[:3] for axis, spec in _load(study, round).items()}


def _load(study: Study, round: int) -> dict[str, tuple[pd.DataFrame, list, dict, pd.DataFrame]]:
    """load_records plus, per axis, the groups' consensus on shared cards (between_groups)."""
    ann_id, turn, annotator, conversation, type_id = _fetch_columns(
        _records_sql(), [study.pk, round, True], 5
    )
    consensus = _Consensus(study)
    labels = _Labels(axis_codes(study), np.unique(np.concatenate([type_id, consensus.type_ids()])))

    # one row per (annotation, type): collapse to one per annotation
    owner, (card, annotator_id, conversation_id) = _collapse(ann_id, turn, annotator, conversation)
    n = len(card)
    group_id = _record_groups(study, conversation_id, annotator_id)
    usernames = _names(get_user_model(), annotator_id, get_user_model().USERNAME_FIELD)
    group_names = _names(Group, group_id, "name")
    group_names[group_id == 0] = NO_GROUP

    out = {}
    for axis in labels.codes:
        sets = labels.sets(labels.masks(owner, n, type_id, axis), axis)
        records = pd.DataFrame(
            {"card": card, "annotator": usernames, "group": group_names, "labels": sets}
        )
        gold, group_sets = consensus.study_gold(labels, axis)
        between = consensus.between_groups(group_sets)
        out[axis] = (records, list(labels.codes[axis]), gold, between)
    return out


def judge_names(study: Study) -> set[str]:
    """Usernames of the study's judges: reference annotators who label but never vote."""
    User = get_user_model()
    field = User.USERNAME_FIELD
    return set(
        User.objects.filter(judged_groups__study=study).values_list(field, flat=True).distinct()
    )


def data_stamp(study: Study) -> dict:
    """A cheap fingerprint of what the report depends on. Labels are append-only (a revision
    is a new row, the old one loses is_current), so the last annotation id and the number of
    current ones change with every label given, revised or deleted; the same for consensus
    (a reopened card keeps its row, no longer current). Two aggregates."""
    annotations = Annotation.objects.filter(turn__conversation__study=study).aggregate(
        last=Max("id"), current=Count("id", filter=Q(is_current=True))
    )
    consensus = Consensus.objects.filter(group__study=study).aggregate(
        last=Max("id"), current=Count("id", filter=Q(is_current=True))
    )
    return {
        "annotation_last_id": annotations["last"] or 0,
        "annotations_current": annotations["current"],
        "consensus_last_id": consensus["last"] or 0,
        "consensus_current": consensus["current"],
    }


def compute_study_report(
    study: Study,
    round: int = 1,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict:
    """The study's agreement report of `round`, every axis, with the report page's extras.
    `progress(done, total, message)` is told before each step."""
    steps = _Steps(progress, total=1 + 2 * len(axis_codes(study)))
    # stamped before reading: a label given meanwhile makes the result stale, never hides
    stamp = data_stamp(study)
    steps("loading the labels from the database")
    data = _load(study, round)
    steps.total = 1 + 2 * len(data)
    judges = judge_names(study)
    axes = {}
    for axis, (all_records, codes, consensus, between) in data.items():
        # judges (e.g. an LLM judge) never vote: not in the pairs, only against the gold
        records = all_records[~all_records["annotator"].isin(judges)]
        steps(f"{axis}: agreement statistics")
        report = agreement_report(records, codes, consensus, n_boot=n_boot, seed=seed)
        steps(f"{axis}: tables for the report page")
        axes[axis] = {
            "report": report,
            "extras": build_extras(records, codes, consensus),
            "versus_consensus": versus_reference(all_records, consensus, codes),
            "between_groups": _between_groups(between, codes, n_boot, seed),
        }
    return {
        "study": study.slug,
        "round": round,
        "taxonomy_version": str(study.taxonomy_version),
        "computed_at": timezone.now().isoformat(),
        "n_boot": n_boot,
        "seed": seed,
        "data_stamp": stamp,
        "axes": axes,
    }


def _between_groups(between: pd.DataFrame, codes: list, n_boot: int, seed: int) -> dict:
    """The agreement between the groups' consensus labels on the cards several groups
    decided: per pair of groups "A|B", the pair keys of the report (Cohen's kappa on sets,
    per label, percent agreement, ...), each group in an annotator's place."""
    if between.empty:
        return {"n_cards": 0, "pairs": {}}
    report = agreement_report(between, codes, n_boot=n_boot, seed=seed)
    return {"n_cards": report["n_pairable_cards"], "pairs": report["pairs"]}


class _Steps:
    """Counts the steps of a computation and tells `progress` before each one."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.done, self.total = progress, 0, total

    def __call__(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total, message)
        self.done += 1
