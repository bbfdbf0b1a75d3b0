"""A running import's conversations stay out of the API as they stay out of the pages
(ConversationQuerySet.visible, issue 24 point 5): an import never shows half of a file, in
no list and no conversation's turns, until its job is done."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Conversation, Job, JobKind, JobStatus
from tests.factories import make_conversation, token_client

pytestmark = pytest.mark.django_db

# every list of the API a lead may read
LISTS = [
    "conversations/",
    "cards/",
    "annotations/",
    "disputes/",
    "consensus/",
    "proposals/",
    "groups/",
    "jobs/",
]


@pytest.fixture
def half(study):
    """c-done was imported earlier; c-half is being written by a running import."""
    make_conversation(study, "c-done", n_turns=1)
    job = Job.objects.create(
        study=study, kind=JobKind.IMPORT, status=JobStatus.RUNNING, heartbeat_at=timezone.now()
    )
    conversation = make_conversation(study, "c-half", n_turns=2)
    Conversation.objects.filter(pk=conversation.pk).update(import_job=job)
    return job, conversation


def test_it_lists_no_conversation_of_a_running_import(client, study, lead, half):
    job, conversation = half
    api = token_client(lead)
    base = f"/api/studies/{study.slug}/"

    listed = api.get(base + "conversations/").json()
    one = api.get(base + "conversations/", {"external_id": "c-half"}).json()
    turns = api.get(base + f"conversations/{conversation.pk}/turns/")

    assert [c["external_id"] for c in listed["results"]] == ["c-done"]
    assert listed["count"] == 1 and one["count"] == 0
    assert turns.status_code == 404
    for url in LISTS:
        body = api.get(base + url).content.decode()
        assert "c-half" not in body, url
    # as the lead's conversations page
    client.force_login(lead)
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert "c-half" not in page and "c-done" in page


def test_it_lists_them_once_the_import_is_done(study, lead, half):
    job, conversation = half
    job.finish({"conversations": 1})
    api = token_client(lead)
    base = f"/api/studies/{study.slug}/"

    listed = api.get(base + "conversations/").json()
    turns = api.get(base + f"conversations/{conversation.pk}/turns/").json()

    assert [c["external_id"] for c in listed["results"]] == ["c-done", "c-half"]
    assert [t["index"] for t in turns["results"]] == [1, 2]
