"""The episodes awaiting a group's moderator (issue 21: moderation works on episodes as on
cards): the escalated episodes of the groups a moderator (or a lead) moderates, then the
disputed ones still in discussion, replayed by the rounds' one rule (rounds.py) with the
moderators' decisions."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import CardStatus, Episode, Unit
from . import rounds

ORDER = ("pk", "conversation_id", "first_turn", "last_turn")  # an episode, its session's order


@dataclass
class Waiting:
    """An episode awaiting `group`'s moderator, in state `state`. Its row (`episode`, with its
    conversation and run) is read for the rows shown only: load_episodes (issue 25: reading
    every one of 100,000 episodes took five seconds)."""

    episode_id: int
    group: object
    state: rounds.EpisodeRound
    loaded: Episode | None = None

    @property
    def episode(self) -> Episode:
        if self.loaded is None:
            load_episodes([self])
        return self.loaded


def load_episodes(waiting) -> None:
    """Read the episodes of `waiting` (a page of them), with their conversations and runs, in
    one query."""
    wanted = [w for w in waiting if w.loaded is None]
    rows = Episode.objects.filter(pk__in={w.episode_id for w in wanted})
    by_id = {e.pk: e for e in rows.select_related("conversation", "run")}
    for w in wanted:
        w.loaded = by_id[w.episode_id]


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
    states = {}
    for (e, g), js in judged.items():
        if js and (e, g) not in decided:
            state = rounds.replay(js, voters[g], study.discussion_rounds)
            if state.status in out:
                states[(e, g)] = state
    # the session's order (then the groups' own), from the places of the groups' episodes
    # read as plain values (by group, not by a list of ids: SQLite caps a query's parameters)
    episodes = Episode.objects.filter(conversation__assignments__group__in=list(by_id))
    place = {pk: rest for pk, *rest in episodes.values_list(*ORDER)}
    astray = {e for e, _ in states} - set(place)  # judged there, its session since unassigned
    if astray:
        place |= {
            pk: rest for pk, *rest in Episode.objects.filter(pk__in=astray).values_list(*ORDER)
        }
    rank = {g: i for i, g in enumerate(by_id)}

    def order(key: tuple[int, int]) -> tuple:
        return (*place[key[0]], key[0], rank[key[1]])

    for key in sorted(states, key=order):
        out[states[key].status].append(Waiting(key[0], by_id[key[1]], states[key]))
    return out[CardStatus.ESCALATED] + out[CardStatus.DISPUTED]
