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

Records: card = turn id, annotator = username, group = the name of the conversation's group.
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

from .agreement import agreement_report, versus_reference
from .models import Annotation, Consensus, Conversation, Group, Study, Turn
from .report_extras import build_extras

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
    }


def _records_sql() -> str:
    # 0 stands for NULL (ids start at 1): a conversation without a group, an annotation
    # without a type ("no smell")
    return """
        SELECT a.id, a.turn_id, a.annotator_id, COALESCE(c.group_id, 0), COALESCE(at.type_id, 0)
        FROM {annotation} a
        JOIN {turn} t ON t.id = a.turn_id
        JOIN {conversation} c ON c.id = t.conversation_id
        LEFT JOIN {annotation_types} at ON at.annotation_id = a.id
        WHERE c.study_id = %s AND a.round = %s AND a.is_current = %s
    """.format(**_tables())


def _consensus_sql() -> str:
    # the consensus row carries its group, so the study is one join away (no turn scan)
    return """
        SELECT k.id, k.turn_id, COALESCE(kt.type_id, 0)
        FROM {consensus} k
        JOIN {group} g ON g.id = k.group_id
        LEFT JOIN {consensus_types} kt ON kt.consensus_id = k.id
        WHERE g.study_id = %s AND k.is_current = %s
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


def load_records(study: Study, round: int = 1) -> dict[str, tuple[pd.DataFrame, list, dict]]:
    """{axis code: (records, codes, consensus)} for `agreement_reports`: the current labels of
    `round`, one record per (card, annotator), and the current consensus {card: frozenset}."""
    ann_id, turn, annotator, group, type_id = _fetch_columns(
        _records_sql(), [study.pk, round, True], 5
    )
    cons_id, cons_turn, cons_type = _fetch_columns(_consensus_sql(), [study.pk, True], 3)
    labels = _Labels(axis_codes(study), np.unique(np.concatenate([type_id, cons_type])))

    # one row per (annotation, type): collapse to one per annotation
    owner, distinct_ids = pd.factorize(ann_id)
    n = len(distinct_ids)
    card = np.zeros(n, dtype=np.int64)
    card[owner] = turn
    annotator_id = np.zeros(n, dtype=np.int64)
    annotator_id[owner] = annotator
    group_id = np.zeros(n, dtype=np.int64)
    group_id[owner] = group
    usernames = _names(get_user_model(), annotator_id, get_user_model().USERNAME_FIELD)
    group_names = _names(Group, group_id, "name")
    group_names[group_id == 0] = NO_GROUP

    cons_owner, cons_distinct = pd.factorize(cons_id)
    cons_card = np.zeros(len(cons_distinct), dtype=np.int64)
    cons_card[cons_owner] = cons_turn
    cons_cards = cons_card.tolist()

    out = {}
    for axis in labels.codes:
        sets = labels.sets(labels.masks(owner, n, type_id, axis), axis)
        records = pd.DataFrame(
            {"card": card, "annotator": usernames, "group": group_names, "labels": sets}
        )
        cons_sets = labels.sets(labels.masks(cons_owner, len(cons_card), cons_type, axis), axis)
        consensus = dict(zip(cons_cards, cons_sets.tolist(), strict=True))
        out[axis] = (records, list(labels.codes[axis]), consensus)
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
    data = load_records(study, round)
    steps.total = 1 + 2 * len(data)
    judges = judge_names(study)
    axes = {}
    for axis, (all_records, codes, consensus) in data.items():
        # judges (e.g. an LLM judge) never vote: not in the pairs, only against the gold
        records = all_records[~all_records["annotator"].isin(judges)]
        steps(f"{axis}: agreement statistics")
        report = agreement_report(records, codes, consensus, n_boot=n_boot, seed=seed)
        steps(f"{axis}: tables for the report page")
        axes[axis] = {
            "report": report,
            "extras": build_extras(records, codes, consensus),
            "versus_consensus": versus_reference(all_records, consensus, codes),
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


class _Steps:
    """Counts the steps of a computation and tells `progress` before each one."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.done, self.total = progress, 0, total

    def __call__(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total, message)
        self.done += 1
