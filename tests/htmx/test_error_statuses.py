"""One htmx policy (base.html's htmx-config): a refusal answers an htmx request with its real
status, 422 for bad input and 409 for a conflict, and the partial carrying its message; htmx
swaps those in like a success. No view answers a refusal with 200 any more."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Kind, Proposal, Role
from tests.factories import make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def card(study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    return make_conversation(study, "c1", n_turns=1, group=group).turns.get()


def test_base_page_sets_the_policy(client, study, alice, card):
    client.force_login(alice)
    page = client.get(reverse("card", args=[study.slug, card.pk])).content.decode()
    assert '<meta name="htmx-config"' in page
    for rule in ('{"code": "409", "swap": true, "error": false}', '{"code": "422", "swap": true'):
        assert rule in page


def test_a_proposal_without_a_reason_is_a_422_with_the_form(client, study, alice, card):
    client.force_login(alice)
    url = reverse("propose", args=[study.slug, card.pk])
    response = client.post(url, {"name": "New", "definition": "d", "reason": ""}, **HTMX)
    assert response.status_code == 422
    assert "Say why none of the existing types fits." in response.content.decode()
    assert not Proposal.objects.exists()


def test_deciding_a_decided_proposal_is_a_409_with_its_box(client, study, alice, card):
    lead = make_user("lead-x")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    proposal = Proposal.propose(
        study=study, turn=card, proposer=alice, name="New", definition="d", reason="r"
    )
    proposal.reject(lead, reason="covered")
    client.force_login(lead)
    url = reverse("proposal_decide", args=[study.slug, proposal.pk])
    response = client.post(url, {"action": "reject", "reason": "again"}, **HTMX)
    assert response.status_code == 409
    assert "already rejected" in response.content.decode()


def test_an_invalid_proposal_decision_is_a_422(client, study, alice, card):
    lead = make_user("lead-x")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    proposal = Proposal.propose(
        study=study, turn=card, proposer=alice, name="New", definition="d", reason="r"
    )
    client.force_login(lead)
    url = reverse("proposal_decide", args=[study.slug, proposal.pk])
    response = client.post(url, {"action": "reject", "reason": ""}, **HTMX)
    assert response.status_code == 422
    assert "A reason is required to reject a proposal." in response.content.decode()


def test_seating_an_unknown_user_is_a_422_with_the_group_box(client, study, lead):
    group = make_group(study, "g1")
    client.force_login(lead)
    url = reverse("lead_group_members", args=[study.slug, group.pk])
    response = client.post(url, {"username": "nobody"}, **HTMX)
    assert response.status_code == 422
    assert "No user named &#x27;nobody&#x27;" in response.content.decode()


def test_a_job_that_cannot_start_is_a_422_with_the_panel(client, study, lead):
    client.force_login(lead)
    response = client.post(reverse("job_export", args=[study.slug]), {"format": "xls"}, **HTMX)
    assert response.status_code == 422
    assert "Export not started" in response.content.decode()


def test_success_is_still_a_200(client, study, lead):
    group = make_group(study, "g1")
    make_user("zoe")
    client.force_login(lead)
    url = reverse("lead_group_members", args=[study.slug, group.pk])
    response = client.post(url, {"username": "zoe"}, **HTMX)
    assert response.status_code == 200
    assert group.annotators.filter(username="zoe").exists()
