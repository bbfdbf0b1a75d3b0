"""POST /api/studies/SLUG/annotations/import/: the same label import as the command, as a
background job; GET /api/studies/SLUG/jobs/ID/ follows it. Leads only."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Annotation, Job, JobStatus
from tests.factories import make_conversation, token_client

pytestmark = pytest.mark.django_db

URL = "/api/studies/s1/annotations/import/"


@pytest.fixture
def eager(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True


def _file(*records: dict) -> SimpleUploadedFile:
    return SimpleUploadedFile(
        "labels.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode()
    )


def test_it_imports_a_group_of_three_as_a_job_and_reports_its_status(
    study, lead, eager, django_capture_on_commit_callbacks
):
    conversation = make_conversation(study, "c1", n_turns=1)
    base = {"conversation": "c1", "turn": 1, "group": "trio", "labels": []}
    upload = _file(
        base | {"annotator": "dora"},
        base | {"annotator": "emil"},
        base | {"annotator": "fay", "labels": ["code_rollback"]},
        base | {"annotator": "fay", "conversation": "nope"},
    )
    api = token_client(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(URL, {"file": upload, "create_members": "true"}, format="multipart")

    assert response.status_code == 202, response.content
    job = Job.objects.get()
    assert response.json()["job"] == job.pk
    status_url = response.json()["status_url"]
    assert status_url.endswith(f"/api/studies/s1/jobs/{job.pk}/")
    state = api.get(status_url).json()
    assert (state["status"], state["result"]["imported"], state["result"]["rejected"]) == (
        JobStatus.DONE,
        3,
        1,
    )
    assert state["result"]["errors"] == [
        "labels.jsonl:4: conversation: unknown conversation id 'nope' in study s1"
    ]
    assert Annotation.objects.count() == 3
    assert conversation.turns.get().states.get().status == "disputed"


def test_only_a_lead_may_import_or_follow_a_job(study, lead, alice, eager):
    study.add_member(alice)
    job = Job.objects.create(study=study, kind="import")
    api = token_client(alice)
    assert api.post(URL, {"file": _file()}, format="multipart").status_code == 404
    assert api.get(f"/api/studies/s1/jobs/{job.pk}/").status_code == 404
    assert not Job.objects.exclude(pk=job.pk).exists()


def test_it_refuses_a_request_without_a_file(study, lead, eager):
    response = token_client(lead).post(URL, {"judge": "true"}, format="multipart")
    assert response.status_code == 400
    assert "file" in response.json()
    assert not Job.objects.exists()
