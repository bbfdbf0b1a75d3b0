"""PUT .../annotation/ with an evidence quote's span: stored when the quote is the stored
text there (a turn of the card's conversation up to the card), else a 400 naming
`evidence_span` and what is wrong, nothing saved."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from tests.api.test_cards import url
from tests.factories import token_client

pytestmark = pytest.mark.django_db


def body(turn: int, start: int, end: int, quote: str, part: str = "user") -> dict:
    span = {"turn": turn, "part": part, "start": start, "end": end}
    return {"labels": ["ambiguous_instruction"], "evidence": quote, "evidence_span": span}


def test_it_stores_a_quote_of_an_earlier_turn_with_its_span(cards_setup, alice):
    _, c1, _ = cards_setup
    t1, t2, _ = c1.turns.order_by("index")
    quote = t1.user_text[4:10]
    response = token_client(alice).put(url(t2, "annotation/"), body(1, 4, 10, quote), "json")
    assert response.status_code == 200, response.json()
    stored = Annotation.objects.get()
    assert (stored.evidence, stored.evidence_turn, stored.evidence_part) == (quote, t1, "user")
    assert (stored.evidence_start, stored.evidence_end) == (4, 10)
    # and the API gives it back as it takes it: in the PUT's answer and on the card
    span = {"turn": 1, "part": "user", "start": 4, "end": 10}
    assert response.json()["evidence_span"] == span
    card = token_client(alice).get(url(t2)).json()
    assert card["annotation"]["evidence_span"] == span


@pytest.mark.parametrize(
    "turn, start, end, message",
    [
        (1, 5, 11, "the quote is not the text at characters 5-11 of turn 1's user message"),
        (3, 4, 10, "turn 3 is not this card's turn or an earlier turn"),
        (9, 4, 10, "turn 9 is not this card's turn or an earlier turn"),
        (1, 4, 999, "characters 4-999 are not a span of turn 1's user message"),
    ],
)
def test_it_refuses_a_quote_not_at_its_span(cards_setup, alice, turn, start, end, message):
    _, c1, _ = cards_setup
    t1, t2, _ = c1.turns.order_by("index")
    quote = t1.user_text[4:10]
    response = token_client(alice).put(
        url(t2, "annotation/"), body(turn, start, end, quote), "json"
    )
    assert response.status_code == 400
    assert message in " ".join(response.json()["evidence_span"])
    assert not Annotation.objects.exists()
