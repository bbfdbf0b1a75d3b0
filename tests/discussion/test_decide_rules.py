"""Who may decide and when: a consensus is decided only on a disputed or escalated card (the
model refuses the rest), by the group's moderator or a lead, never by one of the card's own
annotators."""

from __future__ import annotations

import pytest

from annotation.models import CardState, CardStatus, Consensus, NotDecidable, Role
from tests.factories import HTMX, label, make_conversation, make_group, make_user, study_url

pytestmark = pytest.mark.django_db

DECISION = {"types": ["must_do_omission"], "rationale": "the reply drops a must-do"}


def test_it_refuses_in_the_model_to_decide_an_open_card(alice, moderator, turns_a):
    turn = turns_a[0]
    label(turn, alice, "ambiguous_instruction")
    group = turn.conversation.groups.get()

    with pytest.raises(NotDecidable, match="Round 1 is still open"):
        CardState.decide(turn, group, moderator, [], "too early")

    assert not Consensus.objects.exists()
    assert CardState.objects.get(turn=turn).status == CardStatus.OPEN


def test_it_refuses_in_the_model_to_decide_a_card_nobody_labelled(moderator, turns_a):
    turn = turns_a[0]

    with pytest.raises(NotDecidable):
        CardState.decide(turn, turn.conversation.groups.get(), moderator, [], "too early")

    assert not Consensus.objects.exists()


def test_it_decides_a_disputed_card_in_the_model(moderator, disputed):
    consensus = CardState.decide(
        disputed, disputed.conversation.groups.get(), moderator, [], "none"
    )

    assert (consensus.method, consensus.from_round) == ("moderator", 2)


@pytest.mark.parametrize("headers", [{}, HTMX])
def test_it_refuses_the_page_decision_on_an_open_card(client, alice, moderator, turns_a, headers):
    turn = turns_a[0]
    label(turn, alice, "ambiguous_instruction")
    client.force_login(moderator)

    response = client.post(study_url("decide", turn), DECISION, **headers)

    assert response.status_code == 409
    assert "Round 1 is still open" in response.content.decode()
    assert not Consensus.objects.exists()


def test_it_refuses_a_decision_to_a_lead_who_annotates_the_card(client, study, alice):
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    group = make_group(study, "Experts", [alice, lead])
    turn = make_conversation(study, "c-exp", n_turns=1, group=group).turns.get()
    label(turn, alice, "ambiguous_instruction")
    label(turn, lead, "must_do_omission")
    client.force_login(lead)

    page = client.get(study_url("discussion", turn)).content.decode()
    response = client.post(study_url("decide", turn), DECISION)

    assert 'id="decide"' not in page
    assert response.status_code == 403
    assert not Consensus.objects.exists()
    assert CardState.objects.get(turn=turn).status == CardStatus.DISPUTED


def test_it_lets_a_lead_who_does_not_annotate_decide(client, lead, disputed):
    client.force_login(lead)

    response = client.post(study_url("decide", disputed), DECISION)

    assert response.status_code == 302
    assert Consensus.objects.get(turn=disputed).decided_by == lead


def test_it_refuses_a_decision_to_another_groups_moderator(client, disputed, turns_b):
    other = turns_b[0].conversation.groups.get().moderator
    client.force_login(other)

    assert client.post(study_url("decide", disputed), DECISION).status_code == 404
    assert not Consensus.objects.exists()
