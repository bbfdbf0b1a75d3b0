"""An annotator's episodes (issue 21): the episodes of the conversations assigned to their
groups that annotate episodes, and the next one awaiting their judgement."""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef

from ..access import episodes_hidden_in_queue
from ..models import Episode, EpisodeDecision, EpisodeJudgement, Group, Study, Unit
from . import putoff, rounds

ORDER = ("conversation_id", "first_turn", "last_turn", "pk")  # the session's order


def episode_groups(user, study: Study):
    """The groups of `study` in which `user` judges episodes."""
    return Group.objects.filter(study=study, annotators=user, unit=Unit.EPISODE)


def _walk(user, study: Study):
    """(episode id, the round awaiting `user` or None, judged by them in round 1) for each
    episode of their episode groups, in the session's order (never one hidden from them:
    access.episodes_annotator_sees). A few queries."""
    groups = list(episode_groups(user, study))
    if not groups:
        return
    rows = list(
        Episode.objects.filter(
            conversation__study=study, conversation__assignments__group__in=groups
        )
        .order_by(*ORDER)
        .values_list("pk", "conversation__assignments__group_id")
    )
    judged = rounds.judged_of(None, {g.pk for g in groups})
    voters = rounds.voters_of({g.pk for g in groups})
    decided = rounds.decided_of(None, {g.pk for g in groups})
    hidden = episodes_hidden_in_queue(user, groups)  # another's recorded episode, unrated
    for episode_id, group_id in rows:
        if (episode_id, group_id) in hidden:
            continue
        mine = judged.get((episode_id, group_id), {})
        if not mine:  # nobody has judged it: round 1, open
            yield episode_id, 1, False
            continue
        state = rounds.replay(
            mine, voters[group_id], study.discussion_rounds, (episode_id, group_id) in decided
        )
        r = state.open_round
        waits = r if r is not None and (user.pk, r) not in mine else None
        yield episode_id, waits, (user.pk, 1) in mine


def awaiting(user, study: Study) -> list[tuple[int, int]]:
    """[(episode id, round)] of the episodes awaiting `user`'s judgement in the round open
    now, in the session's order: round 1 first (not judged yet), then the discussion rounds
    (disputed, their judgement of the new round not given yet), then the ones they skipped
    or flagged and have not judged since, oldest put-off first (putoff.py)."""
    first, later, off = [], [], []
    put_off = putoff.put_off_at(user, study)
    for episode_id, r, _ in _walk(user, study):
        if r is None:
            continue
        if episode_id in put_off:
            off.append((put_off[episode_id], episode_id, r))
        else:
            (first if r == 1 else later).append((episode_id, r))
    return first + later + [(episode_id, r) for _, episode_id, r in sorted(off)]


def progress(user, study: Study) -> dict | None:
    """`user`'s episodes for the study page: {"total", "judged" (in round 1), "awaiting"
    (round 1), "discussion" (a discussion round awaiting them)}; None outside episode
    groups."""
    out = {"total": 0, "judged": 0, "awaiting": 0, "discussion": 0}
    for _, r, judged in _walk(user, study):
        out["total"] += 1
        out["judged"] += judged
        if r is not None:
            out["awaiting" if r == 1 else "discussion"] += 1
    return out if out["total"] or episode_groups(user, study).exists() else None


def next_episode(user, study: Study) -> int | None:
    """The id of the episode `user` judges next (awaiting's first), None when none is left:
    the first one they have not judged in round 1 (a walk of the session's order that stops
    there), else the rounds of every episode replayed (awaiting)."""
    groups = list(episode_groups(user, study))
    if not groups:
        return None
    first = _first_in_round_1(user, study, groups)
    if first is not None:
        return first
    found = awaiting(user, study)
    return found[0][0] if found else None


def _first_in_round_1(user, study: Study, groups: list[Group]) -> int | None:
    """awaiting()'s first episode while round 1 awaits `user` somewhere: round 1 stays open
    to an annotator of the group until they have judged in it (rounds.py: it closes once
    every annotator has), unless the moderator has decided the episode. Put off and hidden
    episodes are not in round 1's part of the queue. One query, however many episodes."""
    mine = EpisodeJudgement.objects.filter(
        episode_id=OuterRef("pk"), annotator_id=user.pk, round=1, is_current=True
    )
    decided = EpisodeDecision.objects.filter(
        episode_id=OuterRef("pk"), group_id=OuterRef("in_group"), is_current=True
    )
    skipped = set(putoff.put_off_at(user, study))
    hidden = {episode for episode, _ in episodes_hidden_in_queue(user, groups)}
    rows = (
        Episode.objects.filter(
            conversation__study=study, conversation__assignments__group__in=groups
        )
        .annotate(in_group=F("conversation__assignments__group_id"))
        .exclude(Exists(mine))
        .exclude(Exists(decided))
        .exclude(pk__in=skipped | hidden)
        .order_by(*ORDER)
    )
    return rows.values_list("pk", flat=True).first()
