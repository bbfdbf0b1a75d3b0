"""The kept figures (annotation/models/figures.py, kept by the database's triggers) against
a recount from the rows, for the property tests: the round rules' machine checks them after
every step (labels, revisions, decisions, imports, through the pages, the API and the label
import), test_kept_figures.py after every step of its own (conversations written, imported,
assigned, unassigned, set aside, cut, deleted; groups made and deleted)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from annotation.models import (
    Annotation,
    Assignment,
    CardState,
    Consensus,
    Conversation,
    Group,
    GroupFigures,
    SetAside,
    Study,
    StudyFigures,
)
from annotation.models.figures import STATUSES

STUDY_FIELDS = ("conversations", "turns", "set_aside", "unassigned", "labels")
GROUP_FIELDS = ("conversations", "cards", *STATUSES)


def recount_study(study_id: int) -> dict[str, int]:
    conversations = Conversation.objects.filter(study_id=study_id)
    assigned = Assignment.objects.filter(conversation_id=OuterRef("pk"))
    return {
        "conversations": conversations.count(),
        "turns": sum(conversations.values_list("n_turns", flat=True)),
        "set_aside": conversations.exclude(set_aside=SetAside.NO).count(),
        "unassigned": conversations.filter(set_aside=SetAside.NO).exclude(Exists(assigned)).count(),
        "labels": Annotation.objects.filter(
            turn__conversation__study_id=study_id, is_current=True
        ).count(),
    }


def recount_group(group_id: int) -> dict[str, int]:
    assignments = Assignment.objects.filter(group_id=group_id)
    out = {
        "conversations": assignments.count(),
        "cards": sum(assignments.values_list("conversation__n_turns", flat=True)),
    }
    for status in STATUSES:
        out[status] = CardState.objects.filter(group_id=group_id, status=status).count()
    return out


def label_fingerprint(study_id: int) -> frozenset:
    """What a label write changes: the study's annotation and consensus rows."""
    annotations = Annotation.objects.filter(turn__conversation__study_id=study_id)
    consensus = Consensus.objects.filter(group__study_id=study_id)
    return frozenset(
        [("a", *row) for row in annotations.values_list("id", "is_current", "round")]
        + [("k", *row) for row in consensus.values_list("id", "is_current")]
    )


def check_figures(last_writes: dict[int, tuple[int, frozenset]] | None = None) -> None:
    """Every study's and group's kept figures equal a recount, and each has its row. With
    `last_writes` ({study id: (label_writes, fingerprint)} of the last check, updated here):
    label_writes never goes down and moves whenever the study's label rows changed."""
    for study_id in Study.objects.values_list("pk", flat=True):
        kept = StudyFigures.objects.filter(study_id=study_id).values(*STUDY_FIELDS, "label_writes")
        assert kept, f"study {study_id} has no figures row"
        row = dict(kept[0])
        writes = row.pop("label_writes")
        assert row == recount_study(study_id), f"study {study_id}: kept {row}"
        if last_writes is not None:
            fingerprint = label_fingerprint(study_id)
            before, seen = last_writes.get(study_id, (None, None))
            if before is not None:
                assert writes >= before, f"study {study_id}: label_writes went down"
                if fingerprint != seen:
                    assert writes > before, f"study {study_id}: labels changed, writes did not"
            last_writes[study_id] = (writes, fingerprint)
    for group_id in Group.objects.values_list("pk", flat=True):
        kept = GroupFigures.objects.filter(group_id=group_id).values(*GROUP_FIELDS)
        assert kept, f"group {group_id} has no figures row"
        assert dict(kept[0]) == recount_group(group_id), f"group {group_id}: kept {kept[0]}"
    orphans = GroupFigures.objects.filter(~Q(group__in=Group.objects.all())).count()
    assert not orphans, "figures of a deleted group"
