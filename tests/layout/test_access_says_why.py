"""A page a member may not open YET says why (403), without revealing what they may not see;
a non-member, or an annotator of another group, gets the very 404 of a card or study that
does not exist."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Kind, Role
from tests.factories import HTMX, label, study_url, token_client

pytestmark = pytest.mark.django_db

DISCUSSION_PAGES = ["discussion", "discussion_context", "card_timeline"]


def get(client, user, url, **headers):
    client.force_login(user)
    return client.get(url, **headers)


@pytest.mark.parametrize("name", DISCUSSION_PAGES)
@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_it_tells_an_annotator_the_card_is_still_in_round_1(
    client, alice, bob, turns, name, headers
):
    label(turns[0], bob, "code_rollback", note="bob-secret-note")

    response = get(client, alice, study_url(name, turns[0]), **headers)

    assert response.status_code == 403
    body = response.content.decode()
    assert "This card is still in round 1" in body
    assert "bob-secret-note" not in body and 'data-code="code_rollback"' not in body


def test_it_says_so_for_a_comment_posted_in_round_1(client, alice, turns):
    client.force_login(alice)

    response = client.post(study_url("comment", turns[0]), {"text": "hi"}, **HTMX)

    assert response.status_code == 403
    assert "This card is still in round 1" in response.content.decode()


def test_it_gives_another_groups_annotator_the_404_of_a_missing_card(
    client, charlie, group_b, turns
):
    missing = get(client, charlie, reverse("discussion", args=["s1", 987654]))
    theirs = get(client, charlie, study_url("discussion", turns[0]))

    assert (theirs.status_code, missing.status_code) == (404, 404)
    assert theirs.content == missing.content
    assert b"round 1" not in theirs.content


def test_it_gives_a_non_member_the_404_of_a_missing_study(client, outsider, turns):
    for name in ("discussion", "card"):
        missing = get(client, outsider, reverse(name, args=["nope", turns[0].pk]))
        real = get(client, outsider, study_url(name, turns[0]))
        assert (real.status_code, missing.status_code) == (404, 404)
        assert real.content == missing.content


LEAD_PAGES = [("lead_conversations", ()), ("lead_groups", ()), ("lead_gold", ())]


@pytest.mark.parametrize("name", [n for n, _ in LEAD_PAGES])
def test_it_tells_a_member_a_lead_page_is_for_leads_only(client, alice, outsider, turns, name):
    url = reverse(name, args=["s1"])

    member = get(client, alice, url)
    outside = get(client, outsider, url)
    missing = get(client, outsider, reverse(name, args=["nope"]))

    assert member.status_code == 403
    assert "Leads only" in member.content.decode()
    assert (outside.status_code, outside.content) == (404, missing.content)


def test_it_tells_a_member_a_job_is_for_leads_only_whether_it_exists_or_not(client, alice, turns):
    response = get(client, alice, reverse("job_detail", args=["s1", 424242]))

    assert response.status_code == 403
    assert "Leads only" in response.content.decode()


@pytest.mark.parametrize("name", ["moderate_queue", "report"])
def test_it_tells_an_annotator_a_moderator_page_is_for_leads_and_moderators(
    client, alice, outsider, turns, name
):
    member = get(client, alice, study_url(name))
    outside = get(client, outsider, study_url(name))

    assert member.status_code == 403
    assert "Leads and moderators only" in member.content.decode()
    assert outside.status_code == 404


def test_it_tells_a_student_the_proposals_queue_is_for_leads_and_experts(
    client, study, alice, turns
):
    assert study.memberships.get(user=alice).kind == Kind.STUDENT
    response = get(client, alice, study_url("proposals"))

    assert response.status_code == 403
    assert "Leads and experts only" in response.content.decode()


def test_the_api_still_answers_404_to_a_member_who_is_not_a_lead(alice, study, turns):
    assert study.role_of(alice) == Role.ANNOTATOR

    response = token_client(alice).get("/api/studies/s1/agreement/")

    assert response.status_code == 404
