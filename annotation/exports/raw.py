"""The raw export: every annotation row of the study, all revisions, in the order they
were recorded. Read in chunks of annotation rows, two queries and a seat lookup a chunk."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from django.db.models.fields.json import KeyTextTransform

from ..access import round1_hidden_q
from ..models import Annotation, Assignment, Group, Study
from .columns import (
    ANNOTATION_FIELDS,
    CHUNK_SIZE,
    EVIDENCE_SPAN_COLUMNS,
    TEXT_COLUMNS,
    axis_columns,
    raw_columns,
    text_values,
)
from .writers import write


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
    rows = iter(
        raw_rows(
            study, round=round, chunk_size=chunk_size, with_text=with_text, blind_for=blind_for
        )
    )
    batches = iter(lambda: list(islice(rows, chunk_size)), [])
    return write(batches, raw_columns(with_text, study), Path(path), fmt, progress)


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
        "turn__conversation__key",
        "turn__index",
        "turn__conversation__split_from__key",
        "turn__conversation__split_first_turn",
        KeyTextTransform("modality", "turn__conversation__metadata"),
        "round",
        "annotator__username",
        *ANNOTATION_FIELDS,
        "evidence_turn__index",
        "evidence_part",
        "evidence_part_index",
        "evidence_start",
        "evidence_end",
        "taxonomy_version__taxonomy__slug",
        "taxonomy_version__number",
        "split_pending",
        *(text_values("turn__") if with_text else ()),
    )
    axes = axis_columns(study)
    last_pk = 0
    while True:
        chunk = list(annotations.filter(pk__gt=last_pk).values_list(*fields)[:chunk_size])
        labels = _sets_by_annotation(
            Annotation.types.through.objects.filter(
                annotation_id__in=[row[0] for row in chunk]
            ).values_list("annotation_id", "type__code")
        )
        seats = _Seats(row[1] for row in chunk)
        for (
            pk,
            conversation_id,
            external_id,
            key,
            index,
            split_from,
            first,
            modality,
            rnd,
            username,
            *rest,
        ) in chunk:
            is_current, source, created_at, note, evidence, confidence = rest[:6]
            span, (slug, number), pending, text = rest[6:11], rest[11:13], rest[13], rest[14:]
            codes = labels.get(pk, [])
            yield {
                "study": study.slug,
                "group": seats.group_of(conversation_id, username),
                "conversation": external_id,
                "conversation_key": key,
                "turn": index,
                "split_from": split_from,
                "split_first_turn": first,
                "modality": modality,
                "round": rnd,
                "annotator": username,
                "labels": codes,
                "is_current": is_current,
                "source": source,
                "created_at": created_at.isoformat(),
                "note": note,
                "evidence": evidence,
                "confidence": confidence,
                **dict(zip(EVIDENCE_SPAN_COLUMNS, span, strict=True)),
                "taxonomy_version": f"{slug} v{number}",
                "split_pending": pending,
                **{axis.column: axis.pick(codes) for axis in axes},
                **dict(zip(TEXT_COLUMNS, text, strict=False)),
            }
        if len(chunk) < chunk_size:
            return
        last_pk = chunk[-1][0]


def _sets_by_annotation(rows: Iterable[tuple[int, str]]) -> dict[int, list[str]]:
    """{annotation id: sorted codes} from (annotation id, code) rows."""
    sets: dict[int, list[str]] = {}
    for pk, code in rows:
        sets.setdefault(pk, []).append(code)
    for codes in sets.values():
        codes.sort()
    return sets


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

    def group_of(self, conversation_id: int, username: str) -> str | None:
        """The group in which `username` labels the conversation; a conversation of one
        group answers that group for anyone (someone since removed from it)."""
        groups = self.groups.get(conversation_id, [])
        for group_id, name in groups:
            if username in self.labellers[group_id]:
                return name
        return groups[0][1] if len(groups) == 1 else None
