"""The moderator's decision in the episodes' rules (issue 21): on plain data, the measures take
a decision (a judgement-shaped row with "method": "moderator") as its episode's consensus and
gold, and never as an annotator's round-1 judgement; in the rounds' one rule, a decision is
possible on an escalated episode only, and a decided episode is never reopened, whatever
judgements come later or whoever joins its group (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from annotation.episodes import measures, rounds
from annotation.models import CardStatus, RoundClosed


def j(episode, annotator, round, valid, reason="", labels=None, **extra):
    return {"episode": episode, "group": "G", "annotator": annotator, "round": round,
            "valid": valid, "invalid_reason": reason, "labels": labels or {}} | extra  # fmt: skip


def decision(episode, round, valid, reason="", labels=None):
    return j(episode, "mod", round, valid, reason, labels, method="moderator")


# episode 1: disputed in rounds 1 and 2, escalated, decided valid with a label;
# episode 2: disputed in rounds 1 and 2, decided invalid; episode 3: agreed in round 1
ROWS = [
    j(1, "a", 1, True, labels={"symptom": ["x"]}), j(1, "b", 1, False, "other"),
    j(1, "a", 2, True, labels={"symptom": ["x"]}), j(1, "b", 2, False, "other"),
    decision(1, 3, True, labels={"symptom": ["y"]}),
    j(2, "a", 1, True), j(2, "b", 1, False, "other"),
    j(2, "a", 2, True), j(2, "b", 2, False, "other"),
    decision(2, 3, False, "normative_prior_bias"),
    j(3, "a", 1, True, labels={"symptom": ["x"]}), j(3, "b", 1, True, labels={"symptom": ["x"]}),
]  # fmt: skip
WITHOUT = [r for r in ROWS if not measures.is_decision(r)]


def test_a_decision_is_its_episodes_consensus_and_gold():
    assert measures.consensus_validity(WITHOUT) == {1: "disputed", 2: "disputed", 3: "valid"}
    assert measures.consensus_validity(ROWS) == {1: "valid", 2: "invalid", 3: "valid"}
    assert measures.deciding_rounds(ROWS) == {1: 3, 2: 3, 3: 1}
    assert measures.gold_labels(WITHOUT, {"G": 2}) == {3: {"symptom": ["x"]}}
    assert measures.gold_labels(ROWS, {"G": 2}) == {
        1: {"symptom": ["y"]},
        3: {"symptom": ["x"]},
    }


def test_a_decision_counts_in_the_runs_figures_and_never_in_the_agreement():
    episodes = [{"id": e, "conversation": 1, "run": "r", "first_turn": e, "last_turn": e}
                for e in (1, 2, 3)]  # fmt: skip
    run = measures.run_measures({"name": "r", "counts": {"read": 3}}, episodes, ROWS)
    assert (run["valid"], run["invalid"], run["disputed"]) == (2, 1, 0)
    assert run["invalid_reasons"]["codes"] == {"normative_prior_bias": {"count": 1, "share": 1.0}}
    assert measures.agreement(ROWS, ["symptom"]) == measures.agreement(WITHOUT, ["symptom"])


KEYS = [
    rounds.agreement_key(True, "", {}),
    rounds.agreement_key(True, "", {"symptom": ["x"]}),
    rounds.agreement_key(False, "other", {}),
]
STEPS = st.lists(
    st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(0, 2)), min_size=1, max_size=25
)


@given(
    steps=STEPS,
    decide_at=st.integers(0, 25),
    later=STEPS,
    discussion_rounds=st.integers(0, 2),
    n_voters=st.integers(1, 3),
)
def test_only_an_escalated_episode_is_decided_and_a_decision_is_never_reopened(
    steps, decide_at, later, discussion_rounds, n_voters
):
    voters = set(range(1, n_voters + 1))
    judged: dict = {}
    decided = False
    for i, (who, round, pick) in enumerate(steps):
        if i == decide_at and not decided:
            state = rounds.replay(judged, voters, discussion_rounds)
            refusal = rounds.decision_refusal(state)
            # the server accepts a decision exactly when the rounds escalated the episode
            assert (refusal is None) == (state.status == CardStatus.ESCALATED)
            decided = refusal is None
        try:
            rounds.decide(judged, voters, discussion_rounds, who, round, KEYS[pick], decided)
        except RoundClosed:
            pass
    if not decided:
        state = rounds.replay(judged, voters, discussion_rounds)
        decided = rounds.decision_refusal(state) is None
    if not decided:
        return
    before = dict(judged)
    # once decided: every voter's judgement is refused, in any round; the state stays
    # decided, even with another annotator seated in the group
    for who, round, pick in later:
        who = min(who, n_voters)
        try:
            rounds.decide(judged, voters, discussion_rounds, who, round, KEYS[pick], True)
        except RoundClosed as e:
            assert "its moderator decided it" in str(e)
        else:  # only the judgement stored already passes (nothing written)
            assert judged == before
    for seated in (voters, voters | {99}):
        state = rounds.replay(judged, seated, discussion_rounds, decided=True)
        assert (state.status, state.method, state.open_round) == (
            CardStatus.AGREED,
            "moderator",
            None,
        )
        assert rounds.decision_refusal(state) is not None
