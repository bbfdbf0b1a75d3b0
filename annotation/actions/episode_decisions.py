"""The moderator's side of an episode (issue 21: moderation and discussion work on episodes
as on cards): the decision on an escalated episode, and the comments of its discussion
thread. The server decides who may and when, from the rounds' one rule
(annotation/episodes/rounds.py); the pages only ask."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..episodes import rounds
from ..limits import TextLimit
from ..models import CardStatus, Episode, EpisodeComment, EpisodeDecision, Group
from .episode_judgements import Posted


class DecisionRefused(ValueError):
    """A decision the server will not record: what is wrong, in the page's words."""


class CommentRefused(ValueError):
    """A comment the server will not record: what is wrong, in the page's words."""


def current_decision(episode: Episode, group: Group) -> EpisodeDecision | None:
    return (
        EpisodeDecision.objects.filter(episode=episode, group=group, is_current=True)
        .select_related("decided_by")
        .first()
    )


def _already(decision: EpisodeDecision) -> str:
    who = decision.decided_by.username if decision.decided_by else "a moderator"
    return (
        f"This episode is already decided (by {who}, {decision.decided_at:%Y-%m-%d %H:%M} "
        "UTC): nothing was changed."
    )


def check_rationale(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise DecisionRefused("Rationale: say why you decide so (required).")
    try:
        TextLimit("rationale")(text)
    except ValidationError as e:
        raise DecisionRefused(e.messages[0]) from None
    return text


def decide(episode: Episode, group: Group, moderator, posted: Posted, rationale: str):
    """Record `moderator`'s decision on `episode` in `group`: `posted` (the verdict, read and
    checked by the annotators' rules: actions/episode_judgements.read) with a rationale.
    DecisionRefused, nothing written, unless the episode is escalated now (the rounds' rule)
    and undecided. Who may decide (the group's moderator, a lead, never one of its
    annotators) is the caller's check (access.get_episode_for_member). Decisions on one
    episode are serialised by a lock on its row; the partial unique index is the backstop."""
    rationale = check_rationale(rationale)
    with transaction.atomic():
        Episode.objects.select_for_update().filter(pk=episode.pk).first()
        existing = current_decision(episode, group)
        if existing is not None:
            raise DecisionRefused(_already(existing))
        judged = rounds.judged_of([episode.pk], [group.pk])[(episode.pk, group.pk)]
        voters = rounds.voters_of([group.pk])[group.pk]
        state = rounds.replay(judged, voters, group.study.discussion_rounds)
        refusal = rounds.decision_refusal(state)
        if refusal:
            raise DecisionRefused(f"{refusal} Nothing was saved.")
        try:
            with transaction.atomic():
                return EpisodeDecision.objects.create(
                    episode=episode, group=group, decided_by=moderator, valid=posted.valid,
                    invalid_reason=posted.reason, labels=posted.labels, rationale=rationale,
                    taxonomy_version=group.study.taxonomy_version, from_round=state.round,
                    decided_at=timezone.now(),
                )  # fmt: skip
        except IntegrityError:
            raise DecisionRefused(_already(current_decision(episode, group))) from None


def thread(episode: Episode, group: Group):
    """The episode's discussion in `group`, oldest first (who may read it: access)."""
    rows = EpisodeComment.objects.filter(episode=episode, group=group)
    return rows.select_related("author").order_by("created_at", "pk")


def comment(episode: Episode, group: Group, author, text: str) -> EpisodeComment | None:
    """Add `author`'s comment to the thread, in the round under way: CommentRefused unless
    the episode is in a discussion round or escalated (never in round 1: it is blind; never
    once agreed or decided: the discussion is over). Who may write (the group's annotators,
    its moderator, a lead) is the caller's check. The same text twice in a row in one round
    (a double submit) is kept once: None."""
    text = (text or "").strip()
    if not text:
        raise CommentRefused("Write a comment before sending it.")
    try:
        TextLimit("comment")(text)
    except ValidationError as e:
        raise CommentRefused(e.messages[0]) from None
    state = rounds.state_of(episode.pk, group)
    if state.status == CardStatus.OPEN:
        raise CommentRefused(
            "The discussion opens once round 1 is over (every annotator has judged the "
            "episode): nothing was sent."
        )
    if state.status == CardStatus.AGREED:
        how = "decided by its moderator" if state.decided else "agreed"
        raise CommentRefused(f"The discussion is closed: this episode is {how}.")
    last = EpisodeComment.objects.filter(episode=episode, group=group, author=author).last()
    if last is not None and (last.text, last.round) == (text, state.round):
        return None
    return EpisodeComment.objects.create(
        episode=episode, group=group, author=author, round=state.round, text=text
    )
