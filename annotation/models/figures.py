"""Kept figures (issue 25): the counts the lead's pages show, kept up to date by the
database itself, so that a page reads one row instead of counting the study's rows.

The database keeps them, with triggers (annotation/db/figures.py, made by migration
0031_leadpages_figures): every write path (the ORM, the importers' COPY, a cascade, a raw
statement) moves them, and no code of the app writes these rows. A study's row and a group's
row appear with the study or group (a trigger too) and go with it.

StudyFigures: the study's conversations (every one, of an unfinished import too: the pages
take those off, annotation/figures.py), their turns, those set aside, those in the set no
group has, and `label_writes`, a count of every write of an annotation or consensus row of
the study (the report's data stamp: a report is stale when it moved since the job read it),
and `labels`, its current annotations (the API's list of them counts no rows).
GroupFigures: the group's assigned conversations, their cards (turns), and its cards by
state (the state rows: a card nobody labelled has none and counts as open)."""

from __future__ import annotations

from django.db import models

from .study import Group, Study


class StudyFigures(models.Model):
    study = models.OneToOneField(
        Study, on_delete=models.CASCADE, primary_key=True, related_name="figures"
    )
    conversations = models.BigIntegerField(default=0)
    turns = models.BigIntegerField(default=0)
    set_aside = models.BigIntegerField(default=0)
    unassigned = models.BigIntegerField(default=0)
    label_writes = models.BigIntegerField(default=0)
    labels = models.BigIntegerField(default=0, db_default=0)

    def __str__(self) -> str:
        return f"figures of study {self.study_id}"


class GroupFigures(models.Model):
    group = models.OneToOneField(
        Group, on_delete=models.CASCADE, primary_key=True, related_name="figures"
    )
    conversations = models.BigIntegerField(default=0)
    cards = models.BigIntegerField(default=0)
    # state rows by status (CardStatus): the column is the status's value
    open = models.BigIntegerField(default=0)
    disputed = models.BigIntegerField(default=0)
    escalated = models.BigIntegerField(default=0)
    agreed = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"figures of group {self.group_id}"


STATUSES = ("open", "disputed", "escalated", "agreed")


def group_state_counts(groups) -> dict[int, dict[str, int]]:
    """{group id: {status: cards with a state row of that status}} of `groups` (a queryset
    or ids), from the kept figures: one indexed query, whatever the study's size."""
    rows = GroupFigures.objects.filter(group__in=groups).values_list("group_id", *STATUSES)
    return {pk: dict(zip(STATUSES, counts, strict=True)) for pk, *counts in rows}


def study_labels(study: Study) -> int:
    """The study's current annotations, from the kept figures (one row)."""
    found = StudyFigures.objects.filter(study=study).values_list("labels", flat=True).first()
    return found or 0


def study_conversation_counts(study: Study) -> dict[str, int]:
    """The conversations page's counts of the visible conversations (not of an unfinished
    import: ConversationQuerySet.visible): the kept figures, less those of imports under way
    (counted over their own rows: an import's size, not the study's)."""
    from django.db.models import Count, Exists, OuterRef, Q, Sum
    from django.db.models.functions import Coalesce

    from .corpus import Conversation, SetAside, _unfinished_imports
    from .rounds import Assignment

    kept = StudyFigures.objects.filter(study=study).values(
        "conversations", "turns", "set_aside", "unassigned"
    )
    counts = kept.first() or dict.fromkeys(("conversations", "turns", "set_aside", "unassigned"), 0)
    hidden = Conversation.objects.filter(study=study, import_job__in=_unfinished_imports())
    assigned = Assignment.objects.filter(conversation_id=OuterRef("pk"))
    off = hidden.annotate(assigned=Exists(assigned)).aggregate(
        n_conversations=Count("pk"),
        n_turns=Coalesce(Sum("n_turns"), 0),
        n_set_aside=Count("pk", filter=~Q(set_aside=SetAside.NO)),
        n_unassigned=Count("pk", filter=Q(set_aside=SetAside.NO, assigned=False)),
    )
    out = {key: counts[key] - off[f"n_{key}"] for key in counts}
    out["assigned"] = out["conversations"] - out["set_aside"] - out["unassigned"]
    return out
