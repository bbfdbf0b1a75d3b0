"""Who may open a card's discussion, thread, decision and timeline: nothing of round 1 leaks
before every annotator of the group has submitted, nothing of a group leaks outside it."""

from __future__ import annotations

import pytest

from annotation.models import CardState, Comment, Consensus
from tests.factories import HTMX, label, study_url, token_client

pytestmark = pytest.mark.django_db

READ = ["discussion", "discussion_context", "card_timeline"]
WRITE = ["discussion", "comment", "decide"]
DECISION = {"types": ["must_do_omission"], "rationale": "the reply drops a must-do"}


def assert_nothing_shows(client, turn, refused: int = 404):
    """Every read and write of the card's discussion is refused: 404 (as for a card that
    does not exist) to an outsider, 403 "still in round 1" to one of its annotators."""
    for name in READ:
        assert client.get(study_url(name, turn)).status_code == refused, name
        assert client.get(study_url(name, turn), **HTMX).status_code == refused, name
    for name in WRITE:
        data = {"text": "hello", **DECISION}
        assert client.post(study_url(name, turn), data).status_code == refused, name
        assert client.post(study_url(name, turn), data, **HTMX).status_code == refused, name
    assert not Comment.objects.exists()
    assert not Consensus.objects.filter(turn=turn).exists()


def test_it_hides_a_disputed_card_from_another_group(client, charlie, disputed, turns_b):
    client.force_login(charlie)
    assert_nothing_shows(client, disputed)
    html = client.get(study_url("discuss_queue")).content.decode()
    assert "conv-a" not in html


def test_it_hides_round_1_before_my_own_submit(client, alice, bob, turns_a):
    turn = turns_a[0]
    label(turn, bob, "code_rollback", note="bob-secret-note")
    client.force_login(alice)
    assert_nothing_shows(client, turn, refused=403)
    assert "bob-secret-note" not in client.get(study_url("card", turn)).content.decode()


def test_it_hides_round_1_after_my_submit_until_bob_submits(client, alice, bob, turns_a):
    turn = turns_a[0]
    label(turn, alice, "ambiguous_instruction")
    client.force_login(alice)
    assert_nothing_shows(client, turn, refused=403)
    assert "conv-a" not in client.get(study_url("discuss_queue")).content.decode()

    label(turn, bob, "code_rollback", note="bob-now-visible")
    html = client.get(study_url("discussion", turn)).content.decode()
    assert "bob-now-visible" in html


def test_it_hides_round_1_in_a_group_of_three_until_all_submitted(client, study, alice, bob, dora):
    from tests.factories import make_conversation, make_group

    group = make_group(study, "Three", [alice, bob, dora])
    turn = make_conversation(study, "c3", n_turns=1, group=group).turns.get()
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "code_rollback", note="bob-secret-note")
    client.force_login(alice)
    assert_nothing_shows(client, turn, refused=403)
    label(turn, dora, "code_rollback")
    html = client.get(study_url("discussion", turn)).content.decode()
    assert "bob-secret-note" in html


def test_it_never_shows_bobs_labels_in_alices_api_card(alice, bob, turns_a):
    turn = turns_a[0]
    label(turn, bob, "signature_mismatch", note="bob-secret-note")

    response = token_client(alice).get(f"/api/studies/s1/cards/{turn.pk}/")

    assert response.status_code == 200
    body = response.content.decode()
    assert response.json()["annotation"] is None
    assert "signature_mismatch" not in body and "bob-secret-note" not in body
    assert "bob" not in body


def test_it_refuses_the_moderator_queue_to_annotators(client, alice, bob, charlie, disputed):
    for user in (alice, bob):
        client.force_login(user)
        assert client.get(study_url("moderate_queue")).status_code == 403  # members: told why


def test_it_refuses_a_decision_to_the_cards_annotators(client, alice, disputed):
    client.force_login(alice)
    assert client.get(study_url("discussion", disputed)).status_code == 200
    assert client.post(study_url("decide", disputed), DECISION).status_code == 403
    assert client.post(study_url("decide", disputed), DECISION, **HTMX).status_code == 403
    assert not Consensus.objects.exists()
    assert CardState.objects.get(turn=disputed).status == "disputed"


def test_it_keeps_a_moderator_to_their_own_groups(
    client, moderator, lead, group_a, turns_b, charlie, dora
):
    turn = turns_b[0]
    label(turn, charlie, "ambiguous_instruction")
    label(turn, dora, "code_rollback", note="dora-note")
    client.force_login(moderator)
    assert_nothing_shows(client, turn)
    queue = client.get(study_url("moderate_queue"))
    assert queue.status_code == 200
    assert "conv-b" not in queue.content.decode()
    # asking for another group's cards by filter is refused, not answered
    assert (
        client.get(
            study_url("moderate_queue"), {"group": turn.conversation.groups.get().pk}
        ).status_code
        == 400
    )

    client.force_login(lead)
    assert client.get(study_url("discussion", turn)).status_code == 200
    assert "conv-b" in client.get(study_url("moderate_queue")).content.decode()


def test_it_lets_the_moderator_see_a_card_still_in_round_1(client, moderator, alice, turns_a):
    turn = turns_a[0]
    label(turn, alice, "ambiguous_instruction", note="alice-note")
    client.force_login(moderator)
    response = client.get(study_url("discussion", turn))
    assert response.status_code == 200
    assert "alice-note" in response.content.decode()
    # but deciding before the annotators have finished round 1 is refused
    response = client.post(study_url("decide", turn), DECISION)
    assert response.status_code == 409
    assert "Round 1 is still open" in response.content.decode()
    assert not Consensus.objects.exists()
