from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import label, make_conversation, token_client

URL = "/api/studies/s1/annotations/"


def test_it_lists_all_current_annotations_for_a_lead(cards_setup, alice, bob, lead):
    _, c1, _ = cards_setup
    turn = c1.turns.get(index=2)
    label(turn, alice, "must_do_omission")  # revised below: history, not listed
    mine = label(turn, alice, "ambiguous_instruction", "incomplete_instruction")
    bobs = label(turn, bob)

    response = token_client(lead).get(URL)

    assert response.status_code == 200
    data = response.json()
    assert data["count"] == 2
    rows = data["results"]
    assert [r["id"] for r in rows] == [mine.pk, bobs.pk]
    # `turn` as in the annotation JSONL (the 1-based index); the card's id is `turn_id`
    assert {k: rows[0][k] for k in ("turn_id", "conversation", "turn", "annotator")} == {
        "turn_id": turn.pk,
        "conversation": "c1",
        "turn": 2,
        "annotator": "alice",
    }
    assert "turn_index" not in rows[0]
    assert rows[0]["labels"] == ["ambiguous_instruction", "incomplete_instruction"]
    assert (rows[1]["annotator"], rows[1]["labels"], rows[1]["round"]) == ("bob", [], 1)
    assert rows[0]["created_at"]


def test_it_refuses_the_list_to_annotators_and_strangers(cards_setup, alice, bob, charlie):
    _, c1, _ = cards_setup
    label(c1.turns.first(), bob, "must_do_omission")

    for user in (alice, charlie):
        response = token_client(user).get(URL)
        assert response.status_code == 404
        assert b"must_do_omission" not in response.content


def test_it_lists_annotations_with_a_constant_number_of_queries(cards_setup, alice, bob, lead):
    g1, _, _ = cards_setup
    client = token_client(lead)

    def queries_for(n_conversations: int) -> int:
        for i in range(g1.conversations.count(), n_conversations):
            for turn in make_conversation(
                study=g1.study, external_id=f"x{i}", group=g1
            ).turns.all():
                label(turn, alice, "ambiguous_instruction", "must_do_omission")
                label(turn, bob, "incomplete_instruction")
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(URL)
        assert response.status_code == 200
        assert len(response.json()["results"]) == min(100, 6 * (n_conversations - 1))
        return len(ctx.captured_queries)

    assert queries_for(3) == queries_for(20)


def test_it_paginates_the_list(cards_setup, alice, lead):
    g1, _, _ = cards_setup
    for i in range(35):
        for turn in make_conversation(g1.study, f"x{i}", group=g1).turns.all():
            label(turn, alice)

    first = token_client(lead).get(URL).json()
    second = token_client(lead).get(URL, {"page": 2}).json()

    assert first["count"] == 105
    assert len(first["results"]) == 100
    assert first["next"].endswith("?page=2")
    assert len(second["results"]) == 5
    assert second["next"] is None
