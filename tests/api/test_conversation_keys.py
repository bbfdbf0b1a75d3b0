"""The API and two conversations with one external id (issue 20, defect 1): every
conversation, card, annotation, consensus, dispute, discussion and proposal carries the
conversation's key beside its external id, and the filters take a key (or an id no other
conversation has); an id two conversations share is a 400 naming both keys."""

from __future__ import annotations

import pytest

from annotation.models import Consensus, Conversation
from tests.factories import label, make_conversation, make_group, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def twins(study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    first = make_conversation(study, "x", n_turns=1, group=group)
    second = make_conversation(study, "x", n_turns=1, group=group)
    assert (first.key, second.key) == ("x", "x~2")
    for conversation, codes in ((first, ["code_rollback"]), (second, [])):
        turn = conversation.turns.get()
        label(turn, alice, *codes)
        label(turn, bob, *codes)
    return first, second


def test_cards_carry_the_key(twins, alice):
    client = token_client(alice)
    rows = client.get("/api/studies/s1/cards/").json()["results"]
    assert [(r["conversation"], r["conversation_key"]) for r in rows] == [
        ("x", "x"),
        ("x", "x~2"),
    ]
    card = client.get(f"/api/studies/s1/cards/{twins[1].turns.get().pk}/").json()
    assert (card["conversation"], card["conversation_key"]) == ("x", "x~2")


def test_the_leads_lists_carry_the_key_and_filter_by_it(twins, lead):
    client = token_client(lead)
    rows = client.get("/api/studies/s1/conversations/").json()["results"]
    assert [(r["external_id"], r["key"]) for r in rows] == [("x", "x"), ("x", "x~2")]
    # the external id filter lists both, each with its key; the key filter one
    rows = client.get("/api/studies/s1/conversations/", {"external_id": "x"}).json()
    assert [r["key"] for r in rows["results"]] == ["x", "x~2"]
    rows = client.get("/api/studies/s1/conversations/", {"key": "x~2"}).json()["results"]
    assert [r["id"] for r in rows] == [twins[1].pk]

    for endpoint in ("annotations", "consensus"):
        url = f"/api/studies/s1/{endpoint}/"
        rows = client.get(url, {"conversation": "x~2"}).json()["results"]
        assert rows and {(r["conversation"], r["conversation_key"]) for r in rows} == {
            ("x", "x~2")
        }, endpoint
        rows = client.get(url, {"conversation": "x~1"}).json()["results"]
        assert rows and {r["conversation_key"] for r in rows} == {"x"}, endpoint
        response = client.get(url, {"conversation": "x"})
        assert response.status_code == 400, endpoint
        message = response.json()["conversation"][0]
        assert "id 'x' is ambiguous" in message and "x~1 (key x) or x~2" in message
    assert Consensus.objects.count() == 2


def test_disputes_and_the_discussion_carry_the_key(study, alice, bob, lead):
    group = make_group(study, "g2", [alice, bob])
    make_conversation(study, "y", n_turns=1)
    twin = make_conversation(study, "y", n_turns=1)
    Conversation.objects.filter(pk=twin.pk).assign(group)
    turn = twin.turns.get()
    label(turn, alice, "code_rollback")
    label(turn, bob)
    client = token_client(alice)
    rows = client.get("/api/studies/s1/disputes/").json()["results"]
    assert [(r["conversation"], r["conversation_key"]) for r in rows] == [("y", "y~2")]
    page = client.get(f"/api/studies/s1/cards/{turn.pk}/discussion/").json()
    assert (page["conversation"], page["conversation_key"]) == ("y", "y~2")
