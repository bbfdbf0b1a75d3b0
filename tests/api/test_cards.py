from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, Source
from tests.factories import label, make_conversation, make_group, make_user, token_client


def url(turn=None, suffix: str = "") -> str:
    base = "/api/studies/s1/cards/"
    return base if turn is None else f"{base}{turn.pk}/{suffix}"


def test_it_lists_my_cards_with_done_flags(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    t1, t2, t3 = c1.turns.all()
    label(t1, alice, "ambiguous_instruction")
    label(t2, bob, "ambiguous_instruction")  # Bob's work does not make Alice's card done

    response = token_client(alice).get(url())

    assert response.status_code == 200
    data = response.json()
    assert data["count"] == 3
    assert data["results"] == [
        {"id": t1.pk, "conversation": "c1", "conversation_key": "c1", "index": 1, "done": True},
        {"id": t2.pk, "conversation": "c1", "conversation_key": "c1", "index": 2, "done": False},
        {"id": t3.pk, "conversation": "c1", "conversation_key": "c1", "index": 3, "done": False},
    ]


def test_it_filters_cards_by_done(cards_setup, alice):
    _, c1, _ = cards_setup
    t1, t2, t3 = c1.turns.all()
    label(t1, alice)
    client = token_client(alice)

    done = client.get(url(), {"done": "true"}).json()["results"]
    todo = client.get(url(), {"done": "false"}).json()["results"]

    assert [c["id"] for c in done] == [t1.pk]
    assert [c["id"] for c in todo] == [t2.pk, t3.pk]
    bad = client.get(url(), {"done": "maybe"})
    assert bad.status_code == 400
    assert "done" in bad.json()


def test_it_lists_cards_with_a_constant_number_of_queries(study, alice):
    group = make_group(study, "g1", annotators=[alice])
    client = token_client(alice)

    def queries_for(n_conversations: int) -> int:
        start = group.conversations.count()
        for i in range(start, n_conversations):
            c = make_conversation(study, f"c{i}", n_turns=3, group=group)
            label(c.turns.first(), alice, "ambiguous_instruction")
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url())
        assert response.status_code == 200
        assert response.json()["count"] == 3 * n_conversations
        return len(ctx.captured_queries)

    assert queries_for(10) == queries_for(100)


def test_it_shows_a_card_with_my_annotation(cards_setup, alice):
    _, c1, _ = cards_setup
    turn = c1.turns.get(index=2)
    client = token_client(alice)

    before = client.get(url(turn)).json()
    label(turn, alice, "ambiguous_instruction")
    after = client.get(url(turn)).json()

    assert before["annotation"] is None
    assert (before["conversation"], before["index"], before["n_turns"]) == ("c1", 2, 3)
    assert before["user_text"] == "c1: please write function number 2"
    assert before["reply_text"].startswith("```python")
    assert (before["reply_parts"], before["reply_empty"], before["reply_missing"]) == (
        [],
        False,
        False,
    )
    assert after["annotation"]["labels"] == ["ambiguous_instruction"]
    assert after["annotation"]["round"] == 1


def test_it_never_shows_bobs_round1_labels_to_alice(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    turn = c1.turns.get(index=1)
    client = token_client(alice)
    label(turn, bob, "must_do_omission")
    label(c1.turns.get(index=2), bob, "must_do_omission")

    alone = client.get(url(turn))
    put = client.put(url(turn, "annotation/"), {"labels": ["ambiguous_instruction"]}, "json")
    both = client.get(url(turn))
    listing = client.get(url())

    assert alone.json()["annotation"] is None
    assert both.json()["annotation"]["labels"] == ["ambiguous_instruction"]
    for response in (alone, put, both, listing):
        assert response.status_code == 200
        assert b"must_do_omission" not in response.content
        assert b"bob" not in response.content


def test_it_hides_cards_outside_my_groups(cards_setup, alice, charlie):
    _, c1, c2 = cards_setup
    theirs = c2.turns.first()
    mine = c1.turns.first()

    assert token_client(alice).get(url(theirs)).status_code == 404
    put = token_client(alice).put(url(theirs, "annotation/"), {"labels": []}, "json")
    assert put.status_code == 404
    assert not Annotation.objects.exists()
    for response in (
        token_client(charlie).get(url()),
        token_client(charlie).get(url(mine)),
        token_client(charlie).put(url(mine, "annotation/"), {"labels": []}, "json"),
    ):
        assert response.status_code == 404


def test_it_records_an_annotation_through_the_api(cards_setup, alice):
    _, c1, _ = cards_setup
    turn = c1.turns.first()
    client = token_client(alice)
    body = {
        "labels": ["ambiguous_instruction", "incomplete_instruction"],
        "note": "which API?",
        "evidence": "a streaming client",
        "confidence": 4,
    }

    first = client.put(url(turn, "annotation/"), body, "json")
    second = client.put(url(turn, "annotation/"), {"labels": []}, "json")

    assert first.status_code == 200
    assert first.json()["labels"] == ["ambiguous_instruction", "incomplete_instruction"]
    assert (first.json()["annotator"], first.json()["round"]) == ("alice", 1)
    # a revision is a new row; the old one stays as history
    rows = list(Annotation.objects.filter(turn=turn, annotator=alice).order_by("id"))
    assert [r.is_current for r in rows] == [False, True]
    assert (rows[0].note, rows[0].evidence, rows[0].confidence) == (
        "which API?",
        "a streaming client",
        4,
    )
    assert {r.source for r in rows} == {Source.API}
    # [] is "no smell": a current annotation with no types
    assert second.json()["labels"] == []
    assert list(rows[1].types.all()) == []


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"labels": ["ambiguous_instruction", "made_up"]}, "labels", "'made_up'"),
        ({"labels": "ambiguous_instruction"}, "labels", "list"),
        ({}, "labels", "required"),
        ({"labels": [], "confidence": 6}, "confidence", "less than or equal to 5"),
        ({"labels": [], "round": 0}, "round", "greater than or equal to 1"),
        ({"labels": [], "round": 3}, "round", "rounds 1 to 2"),
    ],
)
def test_it_validates_the_annotation(cards_setup, alice, body, field, message):
    _, c1, _ = cards_setup

    response = token_client(alice).put(url(c1.turns.first(), "annotation/"), body, "json")

    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert not Annotation.objects.exists()


def test_it_refuses_round1_edits_once_round1_is_closed(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    turn = c1.turns.first()
    client = token_client(alice)
    label(turn, bob, "must_do_omission")
    assert client.put(url(turn, "annotation/"), {"labels": []}, "json").status_code == 200

    again = client.put(url(turn, "annotation/"), {"labels": ["must_do_omission"]}, "json")

    assert again.status_code == 409
    assert "left round 1" in again.json()["detail"]
    assert Annotation.objects.filter(turn=turn, annotator=alice).count() == 1


def test_it_accepts_round2_only_after_round1(cards_setup, alice, bob):
    _, c1, _ = cards_setup
    turn = c1.turns.first()
    client = token_client(alice)
    body = {"labels": ["must_do_omission"], "round": 2}

    early = client.put(url(turn, "annotation/"), body, "json")
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "must_do_omission")
    later = client.put(url(turn, "annotation/"), body, "json")

    assert early.status_code == 409
    assert later.status_code == 200
    assert later.json()["round"] == 2
    # round 1 stays as it was; the card view still shows the round-1 annotation
    assert client.get(url(turn)).json()["annotation"]["labels"] == ["ambiguous_instruction"]


def test_it_enforces_the_axis_selection_limits(alice):
    from tests.factories import make_study

    study = make_study("s1", taxonomy="agent-misalignment")
    group = make_group(study, "g1", annotators=[alice, make_user("bob")])
    turn = make_conversation(study, "c1", group=group).turns.first()
    body = {"labels": ["DS1", "DS2"]}

    response = token_client(alice).put(url(turn, "annotation/"), body, "json")

    assert response.status_code == 400
    assert "at most 1" in response.json()["labels"][0]
