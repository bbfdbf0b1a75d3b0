"""The browser and the conversation page are the lead's: annotators, moderators and
outsiders get the 404 of every other lead page (the study's existence does not leak), and
anonymous users the login page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Role
from tests.factories import make_group, make_user

from .helpers import browse_url, conversation_url, make_browsable


@pytest.fixture
def pages(study, alice, bob):
    group = make_group(study, "G1", [alice], moderator=bob)
    # an id no random token (the page's CSRF token) can hold by chance
    conversation = make_browsable(study, "secret-conversation", groups=[group])
    return [browse_url(), browse_url() + "?q=secret", conversation_url(conversation)]


@pytest.mark.parametrize("username", ["alice", "bob", "charlie"])
def test_annotators_moderators_and_outsiders_get_no_such_study(client, pages, username, study):
    user = make_user(username)
    # alice annotates, bob moderates, charlie is not a member
    assert study.role_of(user) == {"alice": Role.ANNOTATOR, "bob": Role.MODERATOR}.get(username)
    client.force_login(user)
    for url in pages:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.get(url, **headers)
            # a member is told why (403, "Leads only"), an outsider learns nothing (404)
            expected = 404 if username == "charlie" else 403
            assert response.status_code == expected, (username, url)
            assert "secret-conversation" not in response.text


def test_anonymous_users_are_sent_to_log_in(client, pages):
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_lead_gets_both_pages(lead_client, pages):
    for url in pages:
        assert lead_client.get(url).status_code == 200, url


def test_the_browser_only_answers_get(lead_client, pages):
    assert lead_client.post(browse_url(), {"q": "c1"}).status_code == 405


def test_the_lead_pages_link_to_the_browser(lead_client, pages, study):
    page = lead_client.get(reverse("lead_conversations", args=[study.slug]))
    assert f'href="{browse_url()}"' in page.text  # the lead's nav
    assert f'href="{pages[2]}"' in page.text  # each row of the table
