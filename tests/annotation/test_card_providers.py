"""The card page composed (annotation/card): every feature's part of the card comes from a
provider the card view walks, so a new one plugs in without the view importing it, and it
is handed the card as its viewer sees it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import card as card_registry
from annotation.card import PROVIDERS, Card, provide, providers
from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    return make_conversation(study, "conv-a", n_turns=2, group=group)


@pytest.fixture
def plugged():
    seen: list[Card] = []

    def provider(card: Card) -> dict:
        seen.append(card)
        return {"plugged": f"turn {card.turn.index} for {card.user.username}"}

    card_registry.register(provider)
    yield seen
    card_registry.unregister(provider)


def test_a_registered_provider_reaches_the_card_and_after_a_submit_the_next(
    client, study, alice, conversation, plugged
):
    t1, t2 = conversation.turns.all()
    client.force_login(alice)
    response = client.get(reverse("card", args=[study.slug, t1.pk]))
    assert response.context["plugged"] == "turn 1 for alice"
    assert plugged[-1].group.name == "g1" and plugged[-1].locked is False
    # after a submit (htmx), the next card is composed the same way
    response = client.post(
        reverse("card", args=[study.slug, t1.pk]), {"no_smell": "on"}, HTTP_HX_REQUEST="true"
    )
    assert response.context["plugged"] == "turn 2 for alice"


def test_a_provider_is_handed_the_viewers_own_label_only(
    client, study, alice, bob, conversation, plugged
):
    t1, _ = conversation.turns.all()
    label(t1, alice, "code_rollback")
    client.force_login(bob)
    client.get(reverse("card", args=[study.slug, t1.pk]))
    assert plugged[-1].user == bob and plugged[-1].mine is None
    client.force_login(alice)
    client.get(reverse("card", args=[study.slug, t1.pk]))
    assert {t.code for t in plugged[-1].mine.types.all()} == {"code_rollback"}


def test_every_listed_provider_loads_and_the_walk_merges_in_order():
    assert len(providers()) >= len(PROVIDERS)
    walk = [lambda c: {"a": 1, "b": 1}, lambda c: {"b": 2}]
    assert provide(Card(study=None, user=None, turn=None, types=[]), walk) == {"a": 1, "b": 2}
