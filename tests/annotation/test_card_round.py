"""The round a card is in for a group, decided by the server (models.CardRound): the API's
labels check the client's round against it; the rule lives in the models, not in a view."""

from __future__ import annotations

import pytest

from annotation.models import CardState, RoundClosed, RoundOutOfRange
from tests.factories import label, make_conversation, make_group


@pytest.fixture
def card(study, alice, bob):
    group = make_group(study, "G", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    return turn, group


def test_a_card_nobody_labelled_is_in_round_1_of_the_studys_rounds(card):
    turn, group = card
    at = CardState.objects.round_of(turn, group)
    assert (at.state, at.round, at.last) == (None, 1, 2)
    at.check_asked(1)
    with pytest.raises(RoundClosed, match="Round 2 is not open for this card: it is in round 1"):
        at.check_asked(2)
    with pytest.raises(RoundOutOfRange, match="this study has rounds 1 to 2"):
        at.check_asked(3)


def test_a_disputed_card_is_in_round_2_and_round_1_is_closed(card, alice, bob):
    turn, group = card
    label(turn, alice, "code_rollback")
    label(turn, bob, "must_do_omission")
    at = CardState.objects.round_of(turn, group)
    assert (at.state.status, at.round, at.last) == ("disputed", 2, 2)
    at.check_asked(2)
    with pytest.raises(RoundClosed, match="has left round 1"):
        at.check_asked(1)
