"""PUT .../annotation/: the server decides the round; the client's `round` (default 1) is
only checked against the round under way (409 when it differs, nothing saved), and a value
that is no round at all is a 400 naming the field, never a 500."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState
from tests.api.test_cards import label, url
from tests.factories import token_client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "value, message",
    [
        (0, "greater than or equal to 1"),
        (-1, "greater than or equal to 1"),
        ("two", "valid integer"),
        (None, "may not be null"),
        (1.5, "valid integer"),
        ([2], "valid integer"),
        (10**30, "rounds 1 to 2"),
        (True, "valid integer"),
    ],
)
def test_it_refuses_a_round_that_is_no_round(cards_setup, alice, value, message):
    _, c1, _ = cards_setup
    body = {"labels": [], "round": value}

    response = token_client(alice).put(url(c1.turns.first(), "annotation/"), body, "json")

    assert response.status_code == 400
    assert message in " ".join(response.json()["round"])
    assert not Annotation.objects.exists()


def disputed_card(c1, alice, bob):
    turn = c1.turns.first()
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "must_do_omission")
    return turn


def test_it_refuses_a_round_the_card_is_not_in(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    turn = disputed_card(c1, alice, bob)
    before = list(Annotation.objects.values_list("pk", "round", "is_current"))

    for body in ({"labels": []}, {"labels": [], "round": 1}):
        response = token_client(alice).put(url(turn, "annotation/"), body, "json")
        assert response.status_code == 409
        assert "left round 1" in response.json()["detail"]
    assert list(Annotation.objects.values_list("pk", "round", "is_current")) == before
    assert CardState.objects.get(turn=turn).round == 2


def test_it_saves_in_the_round_under_way(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    turn = disputed_card(c1, alice, bob)

    response = token_client(alice).put(
        url(turn, "annotation/"), {"labels": ["must_do_omission"], "round": 2}, "json"
    )

    assert response.status_code == 200
    assert response.json()["round"] == 2
    saved = Annotation.objects.get(pk=response.json()["id"])
    assert (saved.round, saved.codes) == (2, frozenset({"must_do_omission"}))


@pytest.mark.parametrize("field", ["note", "evidence"])
def test_it_refuses_a_nul_byte_in_a_note(cards_setup, alice, field):
    _, c1, _ = cards_setup
    body = {"labels": [], field: "before\x00after"}

    response = token_client(alice).put(url(c1.turns.first(), "annotation/"), body, "json")

    assert response.status_code == 400
    assert "Null characters are not allowed." in response.json()[field]
    assert not Annotation.objects.exists()
