"""The episodes awaiting a group's moderator (issue 21: moderation works on episodes as on
cards): the escalated episodes of the groups a moderator (or a lead) moderates, then the
disputed ones still in discussion, replayed by the rounds' one rule (rounds.py) with the
moderators' decisions."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import CardStatus, Episode, Unit
from . import rounds


@dataclass
class Waiting:
    episode: Episode
    group: object
    state: rounds.EpisodeRound


def moderated_episodes(groups, study, user=None) -> list[Waiting]:
    """The escalated episodes of `groups` (those annotating episodes), the longest known
    first (session order), then the disputed ones: each in the group where it stands so.
    Never an episode of a group `user` annotates (they may not decide it). A few queries."""
    groups = [g for g in groups if g.unit == Unit.EPISODE]
    if user is not None:
        mine = set(user.annotation_groups.values_list("pk", flat=True))
        groups = [g for g in groups if g.pk not in mine]
    if not groups:
        return []
    by_id = {g.pk: g for g in groups}
    judged = rounds.judged_of(None, set(by_id))
    voters = rounds.voters_of(set(by_id))
    decided = rounds.decided_of(None, set(by_id))
    out: dict[str, list[Waiting]] = {CardStatus.ESCALATED: [], CardStatus.DISPUTED: []}
    ids = {e for (e, g), js in judged.items() if js and (e, g) not in decided}
    episodes = Episode.objects.filter(pk__in=ids).select_related("conversation", "run")
    for episode in episodes.order_by("conversation_id", "first_turn", "last_turn", "pk"):
        for g in by_id:
            key = (episode.pk, g)
            if key not in judged or key in decided:
                continue
            state = rounds.replay(judged[key], voters[g], study.discussion_rounds)
            if state.status in out:
                out[state.status].append(Waiting(episode, by_id[g], state))
    return out[CardStatus.ESCALATED] + out[CardStatus.DISPUTED]
