"""The card's way through the rounds: the state machine every entry point shares."""

from __future__ import annotations

import pytest

from annotation.models import (
    AlreadyDecided,
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Method,
    RoundClosed,
)
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def group(study, alice, bob):
    return make_group(study, "g1", [alice, bob], moderator=make_user("mod"))


@pytest.fixture
def turn(study, group):
    return make_conversation(study, "c1", n_turns=1, group=group).turns.get()


def types(study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    return [by_code[c] for c in codes]


def state_of(turn):
    return CardState.objects.get(turn=turn)


def current_consensus(turn):
    return Consensus.objects.current().get(turn=turn)


def test_identical_round_1_sets_make_a_unanimous_consensus(turn, alice, bob):
    label(turn, alice, "code_rollback", "must_do_omission")
    assert state_of(turn).status == CardStatus.OPEN
    label(turn, bob, "must_do_omission", "code_rollback")
    state = state_of(turn)
    assert (state.status, state.round) == (CardStatus.AGREED, 1)
    consensus = current_consensus(turn)
    assert consensus.method == Method.UNANIMOUS
    assert consensus.codes == {"code_rollback", "must_do_omission"}
    assert (consensus.from_round, consensus.decided_by) == (1, None)
    assert consensus.taxonomy_version == turn.conversation.study.taxonomy_version


def test_two_no_smell_sets_agree_too(turn, alice, bob):
    label(turn, alice)
    label(turn, bob)
    assert current_consensus(turn).codes == frozenset()


def test_different_sets_open_round_2_and_agreement_there_is_discussion(turn, alice, bob):
    first = label(turn, alice, "code_rollback")
    label(turn, bob, "repetitive_response")
    assert (state_of(turn).status, state_of(turn).round) == (CardStatus.DISPUTED, 2)
    assert not Consensus.objects.filter(turn=turn).exists()
    label(turn, alice, "repetitive_response", round=2)
    label(turn, bob, "repetitive_response", round=2)
    consensus = current_consensus(turn)
    assert (consensus.method, consensus.from_round) == (Method.DISCUSSION, 2)
    # round 1 stays exactly as first submitted
    first.refresh_from_db()
    assert first.is_current and first.codes == {"code_rollback"}


def test_still_different_after_the_discussion_rounds_is_escalated(turn, alice, bob):
    label(turn, alice, "code_rollback")
    label(turn, bob)
    label(turn, alice, "code_rollback", round=2)
    label(turn, bob, round=2)
    assert state_of(turn).status == CardStatus.ESCALATED
    with pytest.raises(RoundClosed):
        label(turn, alice, round=2)


def test_a_study_may_allow_more_discussion_rounds(study, turn, alice, bob):
    study.discussion_rounds = 2
    study.save()
    label(turn, alice, "code_rollback")
    label(turn, bob)
    label(turn, alice, "code_rollback", round=2)
    label(turn, bob, round=2)
    assert (state_of(turn).status, state_of(turn).round) == (CardStatus.DISPUTED, 3)
    label(turn, alice, round=3)
    label(turn, bob, round=3)
    assert (current_consensus(turn).method, current_consensus(turn).from_round) == ("discussion", 3)


def test_in_a_group_of_three_everyone_must_agree(study, charlie, alice, bob):
    group = make_group(study, "trio", [alice, bob, charlie])
    turn = make_conversation(study, "c3", n_turns=1, group=group).turns.get()
    label(turn, alice, "code_rollback")
    label(turn, bob, "code_rollback")
    assert state_of(turn).status == CardStatus.OPEN
    label(turn, charlie)
    assert state_of(turn).status == CardStatus.DISPUTED
    for user in (alice, bob, charlie):
        label(turn, user, "code_rollback", round=2)
    assert current_consensus(turn).method == Method.DISCUSSION


def test_rounds_are_enforced(turn, alice, bob):
    with pytest.raises(RoundClosed, match="Round 2 is not open"):
        label(turn, alice, round=2)
    label(turn, alice, "code_rollback")
    label(turn, alice, "repetitive_response")  # round 1 still open: may change
    label(turn, bob, "repetitive_response")
    with pytest.raises(RoundClosed, match="left round 1"):
        label(turn, alice, "code_rollback")
    with pytest.raises(RoundClosed):
        label(turn, alice, round=3)


def test_the_moderator_decides_once(turn, alice, bob, group):
    label(turn, alice, "code_rollback")
    label(turn, bob)
    label(turn, alice, "code_rollback", round=2)
    label(turn, bob, round=2)
    study = turn.conversation.study
    consensus = CardState.decide(
        turn, group, group.moderator, types(study, "code_rollback"), "the diff shows it"
    )
    assert (consensus.method, consensus.decided_by, consensus.from_round) == (
        Method.MODERATOR,
        group.moderator,
        2,
    )
    assert consensus.rationale == "the diff shows it"
    assert state_of(turn).status == CardStatus.AGREED
    with pytest.raises(AlreadyDecided, match="by mod"):
        CardState.decide(turn, group, group.moderator, [], "second click")
    assert Consensus.objects.filter(turn=turn).count() == 1


def test_a_moderator_may_decide_before_escalation(turn, alice, bob, group):
    label(turn, alice, "code_rollback")
    label(turn, bob)
    CardState.decide(turn, group, group.moderator, [], "no smell here")
    assert current_consensus(turn).codes == frozenset()
    with pytest.raises(RoundClosed):
        label(turn, alice, round=2)


def test_submitting_the_same_labels_twice_writes_one_row(turn, alice):
    a = label(turn, alice, "code_rollback", note="n")
    b = label(turn, alice, "code_rollback", note="n")
    assert a.pk == b.pk
    assert Annotation.objects.filter(turn=turn, annotator=alice).count() == 1
    label(turn, alice, "code_rollback", note="changed my note")
    assert Annotation.objects.filter(turn=turn, annotator=alice).count() == 2


def test_reopening_keeps_the_old_consensus_as_history(turn, alice, bob):
    label(turn, alice)
    label(turn, bob)
    state_of(turn).reopen()
    state = state_of(turn)
    assert (state.status, state.round) == (CardStatus.DISPUTED, 2)
    old = Consensus.objects.get(turn=turn)
    assert not old.is_current and old.method == Method.UNANIMOUS
    label(turn, alice, "code_rollback", round=2)
    label(turn, bob, "code_rollback", round=2)
    assert current_consensus(turn).codes == {"code_rollback"}
    assert Consensus.objects.filter(turn=turn).count() == 2


def test_it_makes_a_single_annotators_labels_the_consensus_of_their_group(study, alice):
    # DESIGN.md: a group of one annotator has no rounds; its labels are its consensus
    group = make_group(study, "solo", [alice])
    turn = make_conversation(study, "c9", n_turns=1, group=group).turns.get()
    label(turn, alice, "code_rollback")
    assert state_of(turn).status == CardStatus.AGREED
    consensus = current_consensus(turn)
    assert (consensus.method, consensus.codes, consensus.from_round) == (
        Method.SINGLE,
        {"code_rollback"},
        1,
    )
    assert consensus.decided_by is None


def test_it_waits_for_an_empty_group_to_get_annotators(study, alice):
    group = make_group(study, "empty", [])
    turn = make_conversation(study, "c9", n_turns=1, group=group).turns.get()
    # a label given by someone outside the group never moves the card
    Annotation.submit(turn=turn, group=group, annotator=alice, types=[])
    assert state_of(turn).status == CardStatus.OPEN


def test_counts_by_group(study, turn, alice, bob, group):
    other = make_conversation(study, "c2", n_turns=2, group=group)
    label(turn, alice)
    label(turn, bob)
    t1 = other.turns.get(index=1)
    label(t1, alice)
    label(t1, bob, "code_rollback")
    # from the kept figures (models/figures.py): every status, the ones with no card 0
    assert CardState.objects.counts_by_group(study) == {
        group.pk: {"open": 0, "disputed": 1, "escalated": 0, "agreed": 1}
    }
