"""Only the study's lead reaches the lead pages: an annotator of the study is told "Leads
only" (403), an outsider gets a 404 on every page, partial and POST, so the study's existence
does not leak."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Conversation, Job, JobKind, Role
from tests.factories import make_conversation, make_group


@pytest.fixture
def setup(study, lead, alice, bob, charlie):
    study.add_member(alice, Role.ANNOTATOR)
    group = make_group(study, "G1")
    conversation = make_conversation(study, "c1")
    job = Job.objects.create(study=study, kind=JobKind.IMPORT)
    return group, conversation, job


def _requests(study, group, conversation, job):
    slug = study.slug
    return [
        ("get", reverse("lead_conversations", args=[slug]), {}),
        ("get", reverse("lead_conversations", args=[slug]) + "?partial=counts", {}),
        ("get", reverse("job_detail", args=[slug, job.pk]), {}),
        ("get", reverse("lead_groups", args=[slug]), {}),
        ("post", reverse("lead_groups", args=[slug]), {"name": "G2", "kind": "expert"}),
        ("post", reverse("lead_import", args=[slug]), {"format": "auto"}),
        ("post", reverse("lead_import_annotations", args=[slug]), {}),
        (
            "post",
            reverse("lead_assign", args=[slug]),
            {"how": "selection", "group": group.pk, "conversation": [conversation.pk]},
        ),
        (
            "post",
            reverse("lead_assign", args=[slug]),
            {"how": "count", "group": group.pk, "count": 1, "seed": 1},
        ),
        (
            "post",
            reverse("lead_group_members", args=[slug, group.pk]),
            {"action": "add", "username": "bob"},
        ),
        (
            "post",
            reverse("lead_group_moderator", args=[slug, group.pk]),
            {"username": "bob"},
        ),
    ]


@pytest.mark.parametrize("username", ["alice", "charlie"])
def test_it_hides_every_lead_page_from_non_leads(client, study, setup, username):
    group, conversation, job = setup
    client.login(username=username, password="pw-secret")
    for method, url, data in _requests(study, group, conversation, job):
        refused = 403 if username == "alice" else 404  # a member is told why
        response = getattr(client, method)(url, data, HTTP_HX_REQUEST="true")
        assert response.status_code == refused, (username, method, url)
        response = getattr(client, method)(url, data)
        assert response.status_code == refused, (username, method, url)
    # nothing changed behind the refusals
    assert study.groups.count() == 1
    assert not group.annotators.exists() and group.moderator is None
    assert not Conversation.objects.get(pk=conversation.pk).groups.exists()
    assert Job.objects.count() == 1


def test_it_serves_every_lead_page_to_the_lead(client, study, setup):
    group, conversation, job = setup
    client.login(username="lead", password="pw-secret")
    for url in [
        reverse("lead_conversations", args=[study.slug]),
        reverse("job_detail", args=[study.slug, job.pk]),
        reverse("lead_groups", args=[study.slug]),
    ]:
        assert client.get(url).status_code == 200, url


def test_it_sends_anonymous_users_to_the_login_page(client, study, setup):
    response = client.get(reverse("lead_conversations", args=[study.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_does_not_show_another_studys_job(client, study, setup):
    from tests.factories import make_study

    other = make_study("s2")
    foreign = Job.objects.create(study=other, kind=JobKind.IMPORT)
    client.login(username="lead", password="pw-secret")
    assert client.get(reverse("job_detail", args=[study.slug, foreign.pk])).status_code == 404
