"""The rows behind a study's agreement report, read straight into integer arrays.

    read_study(study, round) -> StudyRows

The columns come through annotation/db/columns.read_columns: PostgreSQL sends the rows with
COPY ... TO STDOUT (FORMAT binary), parsed by numpy in blocks as they arrive: no Python
object per row or value. SQLite goes through a cursor read in chunks. The queries run in one
transaction, one snapshot; the data stamp of the report (data.data_stamp's numbers) comes
from the rows read, so a label given while the job runs makes the result stale, never hides.

Every query reads integers only, with no NULL: 0 stands for "no type" (ids start at 1),
negative flags for rows the report does not use (see `StudyRows`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..db.columns import read_columns
from ..db.snapshot import read_snapshot
from ..models import (
    Annotation,
    Assignment,
    Consensus,
    Conversation,
    Group,
    Study,
    StudyFigures,
    StudyGold,
    Turn,
)

# the last column of the annotation and consensus queries: records are >= RECORD
RECORD = 0  # a current annotation of the round, a current consensus
# the old version's view (read_study's `move`): a row the move away from it retired
RETIRED_RECORD = 1
NOT_THIS_ROUND = -1  # a current annotation of another round
NOT_CURRENT = -2  # a revised annotation, a reopened card's consensus
PENDING = -3  # a current annotation waiting for its annotator's side of a split type
OTHER_VIEW = -4  # a current row, not of the old version's view
# the flags of current rows (the stamp counts them)
CURRENT_FLAGS = (RECORD, NOT_THIS_ROUND, PENDING, OTHER_VIEW)


_FLAGS = {
    "record": RECORD,
    "retired_record": RETIRED_RECORD,
    "not_this_round": NOT_THIS_ROUND,
    "not_current": NOT_CURRENT,
    "pending": PENDING,
    "other_view": OTHER_VIEW,
}


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


def _annotations_sql(retired: bool = False) -> str:
    # every annotation of the study, for the stamp (last id, number of current ones) too;
    # their types come apart (_types_sql): one hash join less over the biggest table.
    # Params: is_current true, the round, the study; `retired` (an old version's view):
    # the move, the round, is_current true, the study.
    flag = (
        """CASE WHEN a.retired_by_id = %s AND a.round = %s THEN {retired_record}
                 WHEN a.is_current <> %s THEN {not_current}
                 ELSE {other_view} END"""
        if retired
        else """CASE WHEN a.is_current <> %s THEN {not_current}
                 WHEN a.round <> %s THEN {not_this_round}
                 WHEN a.split_pending <> '' THEN {pending}
                 ELSE {record} END"""
    )
    return """
        SELECT a.id, a.turn_id, a.annotator_id, t.conversation_id,
            {flag}
        FROM {annotation} a
        JOIN {turn} t ON t.id = a.turn_id
        JOIN {conversation} c ON c.id = t.conversation_id
        WHERE c.study_id = %s
    """.format(flag=flag.format(**_FLAGS), **_tables())


def _consensus_sql(retired: bool = False) -> str:
    # every consensus of the study (the stamp); the row carries its group, so the study is
    # one join away, the turn gives the conversation. Params: is_current true, the study;
    # `retired`: the move, is_current true, the study.
    flag = (
        """CASE WHEN k.retired_by_id = %s THEN {retired_record}
                 WHEN k.is_current <> %s THEN {not_current} ELSE {other_view} END"""
        if retired
        else "CASE WHEN k.is_current <> %s THEN {not_current} ELSE {record} END"
    )
    return """
        SELECT k.id, k.turn_id, k.group_id, t.conversation_id,
            {flag}
        FROM {consensus} k
        JOIN {group} g ON g.id = k.group_id
        JOIN {turn} t ON t.id = k.turn_id
        WHERE g.study_id = %s
    """.format(flag=flag.format(**_FLAGS), **_tables())


def _types_sql(table: str, owner: str) -> str:
    # the type links of the owners in an id range: a range scan of the link table, no join
    # (a link of another study in the range is dropped by the caller)
    return f"""
        SELECT {owner}, type_id FROM {_tables()[table]} WHERE {owner} BETWEEN %s AND %s
    """


def _study_gold_sql(retired: bool = False) -> str:
    # params: the study, is_current true; `retired`: the study, the move
    which = "k.retired_by_id = %s" if retired else "k.is_current = %s"
    return """
        SELECT k.id, k.turn_id, COALESCE(kt.type_id, 0)
        FROM {study_gold} k
        LEFT JOIN {study_gold_types} kt ON kt.studygold_id = k.id
        WHERE k.study_id = %s AND {which}
    """.format(which=which, **_tables())


def _assignments_sql() -> str:
    return """
        SELECT s.conversation_id, s.group_id
        FROM {assignment} s
        JOIN {group} g ON g.id = s.group_id
        WHERE g.study_id = %s
    """.format(**_tables())


def _members_sql() -> str:
    # (group, user, 1 for a judge): who labels in each group of the study
    return """
        SELECT ga.group_id, ga.user_id, 0
        FROM {group_annotators} ga JOIN {group} g ON g.id = ga.group_id
        WHERE g.study_id = %s
        UNION ALL
        SELECT gj.group_id, gj.user_id, 1
        FROM {group_judges} gj JOIN {group} g ON g.id = gj.group_id
        WHERE g.study_id = %s
    """.format(**_tables())


@dataclass
class StudyRows:
    """The study's rows as arrays:

    annotations: id, turn, annotator, conversation, flag (RECORD on a current annotation of
        the round, RETIRED_RECORD on one of an old version's view; the other flags on the
        others, which only count for the stamp: PENDING on one waiting for a split side)
    annotation_types: annotation, type (of the annotations in the id range of the study's)
    consensus: id, turn, group, conversation, flag (RECORD on a current one, RETIRED_RECORD,
        NOT_CURRENT, OTHER_VIEW)
    consensus_types: consensus, type (in the id range of the study's consensus)
    gold: id, turn, type (0: none) of the lead's current study-level gold
    assignments: conversation, group
    members: group, user, is_judge
    """

    annotations: list[np.ndarray]
    annotation_types: list[np.ndarray]
    consensus: list[np.ndarray]
    consensus_types: list[np.ndarray]
    gold: list[np.ndarray]
    assignments: list[np.ndarray]
    members: list[np.ndarray]

    # the study's StudyFigures.label_writes, read in the rows' snapshot
    label_writes: int = 0

    def stamp(self) -> dict:
        """data.data_stamp's figure, as it stood when the rows were read."""
        return {"label_writes": self.label_writes}


def label_writes(study: Study) -> int:
    """The study's count of label and consensus writes (models/figures.py): one row."""
    found = StudyFigures.objects.filter(study=study).values_list("label_writes", flat=True)
    return found.first() or 0


def read_study(study: Study, round: int, move: int | None = None) -> StudyRows:
    """The rows of `study`, one snapshot (one REPEATABLE READ transaction on PostgreSQL,
    unless the caller runs one already; one read transaction on SQLite). `move`: the id of
    the study's move away from an old taxonomy version, whose view is read (the rows it
    retired: that version's labels as they stood), instead of the current labels."""
    with read_snapshot():
        old = move is not None
        a_params = [move, round, True, study.pk] if old else [True, round, study.pk]
        k_params = [move, True, study.pk] if old else [True, study.pk]
        annotations = read_columns(_annotations_sql(old), a_params, 5)
        consensus = read_columns(_consensus_sql(old), k_params, 5)
        return StudyRows(
            annotations=annotations,
            annotation_types=_types_of(annotations[0], "annotation_types", "annotation_id"),
            consensus=consensus,
            consensus_types=_types_of(consensus[0], "consensus_types", "consensus_id"),
            gold=read_columns(_study_gold_sql(old), [study.pk, move if old else True], 3),
            assignments=read_columns(_assignments_sql(), [study.pk], 2),
            members=read_columns(_members_sql(), [study.pk, study.pk], 3),
            label_writes=label_writes(study),
        )


def _types_of(ids: np.ndarray, table: str, owner: str) -> list[np.ndarray]:
    if not len(ids):
        return [np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)]
    return read_columns(_types_sql(table, owner), [int(ids.min()), int(ids.max())], 2)


# The ids of one study's rows lie in a narrow range mostly (rows are written a study, an
# import at a time): a bincount over the range ranks or counts them in one pass, where a
# sort or a hash table costs several. A wide range (ids spread over a big table) sorts.


def _narrow(*arrays: np.ndarray) -> tuple[int, int] | None:
    """(lowest id, size of the range) over the arrays when the range is narrow, else None."""
    arrays = tuple(a for a in arrays if len(a))
    if not arrays:
        return 0, 1
    low = min(int(a.min()) for a in arrays)
    size = max(int(a.max()) for a in arrays) - low + 1
    return (low, size) if size <= 4 * sum(len(a) for a in arrays) + 1024 else None


def rank_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each id into the distinct ids, the distinct ids in ascending order)."""
    span = _narrow(ids)
    if span is None:
        distinct, index = np.unique(ids, return_inverse=True)
        return index.reshape(-1).astype(np.int64), distinct
    low, size = span
    present = np.bincount(ids - low, minlength=size) > 0
    rank = np.cumsum(present) - 1
    return rank[ids - low], np.flatnonzero(present) + low


def count_per(keys: np.ndarray, of: np.ndarray) -> np.ndarray:
    """How often each value of `of` occurs in `keys`."""
    span = _narrow(keys, of)
    if span is not None:
        low, size = span
        return np.bincount(keys - low, minlength=size)[of - low]
    distinct, counts = np.unique(keys, return_counts=True)
    if not len(distinct):
        return np.zeros(len(of), dtype=np.int64)
    at = np.minimum(np.searchsorted(distinct, of), len(distinct) - 1)
    return np.where(distinct[at] == of, counts[at], 0)


def value_per(keys: np.ndarray, values: np.ndarray, of: np.ndarray, missing: int = 0) -> np.ndarray:
    """The value of each key of `of` (`keys` unique where it matters), `missing` for an
    absent one."""
    span = _narrow(keys, of)
    if span is not None:
        low, size = span
        table = np.full(size, missing, dtype=values.dtype)
        table[keys - low] = values
        return table[of - low]
    order = np.argsort(keys, kind="stable")
    at = np.minimum(np.searchsorted(keys[order], of), max(len(keys) - 1, 0))
    if not len(keys):
        return np.full(len(of), missing, dtype=values.dtype)
    found = keys[order][at] == of
    return np.where(found, values[order][at], missing)
