"""Putting an episode off (issue 21), as a card (views/skip.py): an annotator skips it, or
flags it for later with a reason. Either way their next episode comes at once and this one
goes to the end of their episode queue (queue.awaiting), oldest put-off first, until they
judge it: a judgement given after the skip or flag clears it from the queue (the row stays,
so the lead still reads the flag, "judged since"). The lead lists flags on the flagged cards'
page; a flag's reason may give a judgement away, so someone else's reason on an episode the
viewer judges blind (rounds.round1_hidden_episodes) is hidden, like the judgements."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.utils import timezone

from ..models import Episode, EpisodeJudgement, EpisodeSkip, Group, SkipKind, Study, Unit

# what the flags page reads of a flag: never a turn's text, nor anyone's judgement
FLAG_FIELDS = ("kind", "reason", "created_at", "annotator__username")
FLAG_FIELDS += ("episode__first_turn", "episode__last_turn", "episode__run__name")
FLAG_FIELDS += ("episode__conversation__key", "episode__conversation__n_turns")


def put_off(episode: Episode, annotator, kind: str, reason: str = "") -> EpisodeSkip:
    """Record a skip or flag now, in place of the annotator's earlier one on the episode."""
    with transaction.atomic():
        row, _ = EpisodeSkip.objects.update_or_create(
            episode=episode,
            annotator=annotator,
            defaults={"kind": kind, "reason": reason, "created_at": timezone.now()},
        )
    return row


def _judged_since() -> Exists:
    """Whether the skip's annotator judged its episode at or after the skip (any round)."""
    return Exists(
        EpisodeJudgement.objects.filter(
            episode_id=OuterRef("episode_id"),
            annotator_id=OuterRef("annotator_id"),
            created_at__gte=OuterRef("created_at"),
        )
    )


def put_off_at(user, study: Study) -> dict[int, datetime]:
    """{episode id: when} of `user`'s skips and flags in `study` not cleared by a judgement
    since: the episodes their queue puts last, in this order. One query."""
    rows = EpisodeSkip.objects.filter(annotator_id=user.pk, episode__conversation__study=study)
    rows = rows.exclude(_judged_since())
    return dict(rows.values_list("episode_id", "created_at"))


def mine(user, episode: Episode) -> EpisodeSkip | None:
    """`user`'s skip or flag of `episode` still in force (not judged since), if any."""
    rows = EpisodeSkip.objects.filter(annotator_id=user.pk, episode=episode)
    return rows.exclude(_judged_since()).first()


def flags(study: Study) -> QuerySet:
    """The study's episode flags, newest first, each with `judged` (its annotator judged the
    episode since) and `in_group` (the flagger's episode group for it, for the link)."""
    group = Group.objects.filter(
        assignments__conversation_id=OuterRef("episode__conversation_id"),
        annotators=OuterRef("annotator_id"),
        unit=Unit.EPISODE,
    ).values("pk")[:1]
    return (
        EpisodeSkip.objects.filter(kind=SkipKind.FLAG, episode__conversation__study=study)
        .select_related("annotator", "episode__conversation", "episode__run")
        .only(*FLAG_FIELDS)
        .annotate(judged=_judged_since(), in_group=Subquery(group))
        .order_by("-created_at", "-pk")
    )


def flag_count(study: Study) -> int:
    """How many episode flags the study has (the study page's link says so). One query."""
    return EpisodeSkip.objects.filter(
        kind=SkipKind.FLAG, episode__conversation__study=study
    ).count()
