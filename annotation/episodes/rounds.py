"""An episode's rounds in one group, the one rule the import (`import_annotations`) and the
episode card's submit both obey: the cards' round rule (models.RoundRules) replayed over the
episode's current judgements, as no state row is kept for an episode.

- Round 1 is each annotator's own, blind judgement; they may revise it while round 1 is open.
- Round 1 closes once every annotator of the group has judged the episode: the same verdict,
  reason and labels from all (`agreement_key`) is the consensus (unanimous; `single` for a
  group of one); any difference makes the episode disputed and opens round 2, a discussion
  round, in which each annotator sees the others' judgements and judges again (keeping or
  revising theirs).
- A later round closes the same way; after the study's discussion rounds a disagreement is
  escalated (to the group's moderator).
- The moderator (or a lead) decides an escalated episode (EpisodeDecision): from then on the
  episode is decided, agreed by the method "moderator", whatever its judgements or its
  group's annotators become (a decision is never reopened by a later judgement, nor by an
  annotator joining the group).
- Only the group's annotators (voters) move the rounds; a judgement the same as the one stored
  changes nothing; a changed judgement in an open round replaces the stored one (a revision)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import TextField
from django.db.models.functions import Cast

from ..models import (
    CardStatus,
    Episode,
    EpisodeDecision,
    EpisodeJudgement,
    Group,
    Method,
    RoundClosed,
    RoundRules,
    Unit,
)

__all__ = [
    "EpisodeRound",
    "Judged",
    "RoundClosed",
    "SAME",
    "WRITE",
    "agreement_key",
    "decide",
    "decided_of",
    "decision_refusal",
    "judged_of",
    "replay",
    "round1_hidden_episodes",
    "state_of",
    "voters_of",
]

SAME = "same"  # the judgement stored already: nothing to write
WRITE = "write"  # a new judgement (or a revision of the stored one) to write


def agreement_key(valid: bool, reason: str, labels: dict) -> frozenset:
    """What two judgements must share to agree: the verdict, the reason, every label."""
    if not valid:
        return frozenset({"invalid", f"reason:{reason}"})
    return frozenset({"valid"} | {f"{a}:{c}" for a, codes in labels.items() for c in codes})


# {(annotator id, round): (row id or None, agreement key)}: an episode's current judgements
# in one group
Judged = dict


@dataclass
class EpisodeRound(RoundRules):
    """An episode's round in one group, replayed from its judgements (`replay`)."""

    status: str = CardStatus.OPEN
    round: int = 1
    method: str | None = None  # how the consensus came, once agreed
    rounds: list[int] = field(default_factory=list)  # the rounds that closed, in order

    @property
    def revealed(self) -> bool:
        """Round 1 is over: the group's judgements are no longer blind to each other."""
        return self.status != CardStatus.OPEN

    @property
    def decided(self) -> bool:
        """The group's moderator decided it (EpisodeDecision)."""
        return self.method == Method.MODERATOR

    @property
    def open_round(self) -> int | None:
        """The round its annotators judge now, None once agreed or escalated."""
        if self.status in (CardStatus.OPEN, CardStatus.DISPUTED):
            return self.round
        return None


def replay(
    judged: Judged, voters: set[int], discussion_rounds: int, decided: bool = False
) -> EpisodeRound:
    """The episode's state in its group from its current judgements: the cards' round rule
    (RoundRules.step) applied round after round; `decided` (a current EpisodeDecision): agreed
    by the moderator, whatever the judgements say."""
    state = EpisodeRound()
    if decided:
        _replay(state, judged, voters, discussion_rounds)
        state.status, state.method = CardStatus.AGREED, Method.MODERATOR
        return state
    return _replay(state, judged, voters, discussion_rounds)


def _replay(state: EpisodeRound, judged: Judged, voters: set[int], discussion_rounds: int):
    while True:
        keys = [key for (a, r), (_, key) in judged.items() if r == state.round and a in voters]
        before = state.round
        moved, method = state.step(len(voters), keys, discussion_rounds)
        if moved:
            state.rounds.append(before)
            state.method = method
        if not moved or state.round == before:
            return state


def decide(
    judged: Judged,
    voters: set[int],
    discussion_rounds: int,
    annotator_id: int,
    round: int,
    key: frozenset,
    decided: bool = False,
) -> tuple[str, int | None]:
    """What a judgement `key` by `annotator_id` for `round` does: (SAME, None) when it is the
    one stored; (WRITE, id of the row it replaces or None); RoundClosed (in an episode's
    words) when the round is not open for it. Someone who is not a voter (a judge, an
    imported reference) is not held to the rounds; `decided`: the moderator decided the
    episode (closed to every voter). `judged` is updated as if written."""
    had = judged.get((annotator_id, round))
    if had is not None and had[1] == key:
        return SAME, None
    if annotator_id in voters:
        if decided:
            raise RoundClosed(
                f"Round {round} is not open for this episode: its moderator decided it."
            )
        state = replay(judged, voters, discussion_rounds)
        try:
            state.check_open_for(round)
        except RoundClosed as e:
            raise RoundClosed(episode_words(str(e))) from None
    judged[(annotator_id, round)] = (None, key)
    return WRITE, (had[0] if had is not None else None)


def decision_refusal(state: EpisodeRound) -> str | None:
    """Why the moderator may not decide an episode in `state` (None: they may): only an
    escalated episode is decided, once."""
    if state.status == CardStatus.ESCALATED:
        return None
    where = {
        CardStatus.OPEN: "in round 1",
        CardStatus.DISPUTED: f"in discussion round {state.round}",
        CardStatus.AGREED: "decided already" if state.decided else "agreed by its annotators",
    }[state.status]
    return f"Only an escalated episode is decided by its moderator: this one is {where}."


def episode_words(message: str) -> str:
    """A card's round message said of an episode."""
    message = message.replace("round-1 labels", "round-1 judgements")
    return message.replace("card", "episode").replace("labelled", "judged")


def voters_of(group_ids) -> dict[int, set[int]]:
    """{group id: its annotators' ids}: who votes in each group's rounds."""
    through = Group.annotators.through
    out: dict[int, set[int]] = {g: set() for g in group_ids}
    rows = through.objects.filter(group_id__in=list(out)).values_list("group_id", "user_id")
    for g, u in rows:
        out[g].add(u)
    return out


def judged_of(episode_ids=None, group_ids=None) -> dict[tuple[int, int], Judged]:
    """{(episode id, group id): Judged} of the current judgements of `episode_ids` (every
    episode when None) in `group_ids` (every group when None): one query. A queue asks by
    group alone: a long list of episode ids costs SQLite more than the rows."""
    out: dict[tuple[int, int], Judged] = defaultdict(dict)
    rows = EpisodeJudgement.objects.filter(is_current=True)
    if episode_ids is not None:
        rows = rows.filter(episode_id__in=list(episode_ids))
    if group_ids is not None:
        rows = rows.filter(group_id__in=list(group_ids))
    # the labels as the database's text, decoded once for each distinct verdict: a queue
    # reads every judgement of its groups, and few of them differ (issue 25: decoding and
    # keying each of 150,000 took a second and a half)
    keys: dict[tuple, frozenset] = {}
    for pk, e, g, a, r, valid, reason, text in rows.values_list(
        "pk", "episode_id", "group_id", "annotator_id", "round", "valid", "invalid_reason",
        Cast("labels", TextField()),
    ):  # fmt: skip
        verdict = (valid, reason, text if valid else None)
        key = keys.get(verdict)
        if key is None:
            labels = json.loads(text) if valid and text else {}
            key = keys[verdict] = agreement_key(valid, reason, labels)
        out[(e, g)][(a, r)] = (pk, key)
    return out


def decided_of(episode_ids=None, group_ids=None) -> set[tuple[int, int]]:
    """{(episode id, group id)} of the episodes with a current moderator's decision, among
    `episode_ids` and `group_ids` (every one when None): one query."""
    rows = EpisodeDecision.objects.filter(is_current=True)
    if episode_ids is not None:
        rows = rows.filter(episode_id__in=list(episode_ids))
    if group_ids is not None:
        rows = rows.filter(group_id__in=list(group_ids))
    return set(rows.values_list("episode_id", "group_id"))


def state_of(episode_id: int, group: Group) -> EpisodeRound:
    """The episode's round in `group` as the server decides it (three queries)."""
    judged = judged_of([episode_id], [group.pk])[(episode_id, group.pk)]
    voters = voters_of([group.pk])[group.pk]
    decided = bool(decided_of([episode_id], [group.pk]))
    return replay(judged, voters, group.study.discussion_rounds, decided)


def round1_hidden_episodes(user, study, episode_ids=None) -> set[int]:
    """The ids of the episodes of `study` (of `episode_ids` only, when given) on which `user`
    may see nobody else's round-1 work (their judgement, flag reason or time): those of an
    episode group `user` annotates whose round 1 is not over there (replayed: no state row
    is kept). access.round1_hidden_from's rule for cards, said of episodes. Three queries."""
    if not getattr(user, "is_authenticated", False):
        return set()
    groups = list(
        Group.objects.filter(study=study, annotators=user, unit=Unit.EPISODE).values_list(
            "pk", flat=True
        )
    )
    if not groups:
        return set()
    rows = Episode.objects.filter(conversation__assignments__group__in=groups)
    if episode_ids is not None:
        rows = rows.filter(pk__in=list(episode_ids))
    pairs = list(rows.values_list("pk", "conversation__assignments__group_id"))
    judged = judged_of([e for e, _ in pairs] if episode_ids is not None else None, groups)
    voters = voters_of(groups)
    return {
        e
        for e, g in pairs
        if not replay(judged.get((e, g), {}), voters[g], study.discussion_rounds).revealed
    }
