"""Issue 12: uploads have a size limit (CARDSORT_UPLOAD_MAX_BYTES) with a message naming the
file and the limit; their stored names are normalised (a 300-character name was a server
error) while the job keeps the lead's name; a successful import's uploads are removed, or
kept CARDSORT_UPLOAD_KEEP_DAYS and then removed by `manage.py purge_uploads`."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation.models import Conversation, Job, JobStatus
from tests.factories import make_conversation, token_client

pytestmark = pytest.mark.django_db


def _record(cid: str) -> str:
    messages = [
        {"role": "user", "content": f"{cid}: write a parser"},
        {"role": "assistant", "content": "def parse(s): ..."},
    ]
    return json.dumps({"id": cid, "messages": messages, "metadata": {}}) + "\n"


GOOD = (_record("c1") + _record("c2")).encode()
BAD = b'{"id": "x", "messages": 5}\n'


@pytest.fixture
def eager(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


def import_page(client, study, files, **data):
    client.login(username="lead", password="pw-secret")
    return client.post(reverse("lead_import", args=[study.slug]), {"files": files, **data})


def flashed(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_a_300_character_name_is_imported_under_a_short_name(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    name = "a" * 294 + ".jsonl"
    with django_capture_on_commit_callbacks(execute=True):
        response = import_page(client, study, [SimpleUploadedFile(name, GOOD)])
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    # the job names the lead's file, as Django gives it (capped at 255 characters)
    assert job.params["files"][0]["name"] == name[:249] + ".jsonl"
    stored = job.params["files"][0]["path"]
    assert len(stored.rsplit("/", 1)[-1].encode()) <= 110 and stored.endswith(".jsonl")
    assert Conversation.objects.count() == 2


def test_a_file_over_the_limit_is_refused_naming_it_and_the_limit(client, study, lead, eager):
    eager.CARDSORT_UPLOAD_MAX_BYTES = 1000
    files = [SimpleUploadedFile("small.jsonl", GOOD), SimpleUploadedFile("big.jsonl", b"x" * 1001)]
    response = import_page(client, study, files)
    assert response.status_code == 302
    (message,) = flashed(response)
    assert message.startswith("Not imported: big.jsonl is larger than 1000 bytes (1,000 bytes)")
    assert "CARDSORT_UPLOAD_MAX_MB" in message
    assert not Job.objects.exists()
    assert not (eager.MEDIA_ROOT / "imports").exists()


def test_a_file_at_the_limit_is_taken(client, study, lead, eager):
    eager.CARDSORT_UPLOAD_MAX_BYTES = len(GOOD)
    import_page(client, study, [SimpleUploadedFile("exact.jsonl", GOOD)])
    assert Job.objects.get().params["files"][0]["name"] == "exact.jsonl"


def test_the_annotation_import_page_refuses_it_too(client, study, lead, eager):
    eager.CARDSORT_UPLOAD_MAX_BYTES = 10
    client.login(username="lead", password="pw-secret")
    url = reverse("lead_import_annotations", args=[study.slug])
    response = client.post(url, {"file": SimpleUploadedFile("labels.jsonl", b"y" * 11)})
    assert response.status_code == 302
    assert flashed(response)[0].startswith("Not imported: labels.jsonl is larger than 10 bytes")
    assert not Job.objects.exists()


def test_the_api_import_answers_400_naming_the_file(study, lead, eager):
    eager.CARDSORT_UPLOAD_MAX_BYTES = 10
    upload = SimpleUploadedFile("labels.jsonl", b"y" * 11)
    response = token_client(lead).post(
        "/api/studies/s1/annotations/import/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400
    (message,) = response.json()["file"]
    assert message.startswith("Not imported: labels.jsonl is larger than 10 bytes")
    assert not Job.objects.exists()


def _job_files(job) -> list[str]:
    return [f["path"] for f in job.params["files"]]


def test_a_successful_imports_upload_is_removed_and_its_rejected_list_kept(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_page(client, study, [SimpleUploadedFile("mixed.jsonl", GOOD + BAD)])
    job = Job.objects.get()
    assert job.status == JobStatus.DONE
    assert not any((eager.MEDIA_ROOT / p).exists() for p in _job_files(job))
    # the rejected records' download still works
    response = client.get(reverse("job_download", args=[study.slug, job.pk]))
    assert response.status_code == 200
    assert b"mixed.jsonl:3" in b"".join(response.streaming_content)


def test_a_failed_imports_upload_is_kept(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_page(client, study, [SimpleUploadedFile("bad.jsonl", BAD)])
    job = Job.objects.get()
    assert job.status == JobStatus.FAILED
    assert all((eager.MEDIA_ROOT / p).read_bytes() == BAD for p in _job_files(job))


def test_uploads_are_kept_the_days_configured_then_purged(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    eager.CARDSORT_UPLOAD_KEEP_DAYS = 3
    with django_capture_on_commit_callbacks(execute=True):
        import_page(client, study, [SimpleUploadedFile("good.jsonl", GOOD)])
    job = Job.objects.get()
    stored = eager.MEDIA_ROOT / _job_files(job)[0]
    call_command("purge_uploads", stdout=io.StringIO())
    assert stored.exists()  # not expired yet
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(days=4))
    out = io.StringIO()
    call_command("purge_uploads", stdout=out)
    assert not stored.exists()
    assert "Removed the uploads of 1 import(s)" in out.getvalue()


def test_purge_removes_failed_imports_uploads_only_when_asked(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_page(client, study, [SimpleUploadedFile("bad.jsonl", BAD)])
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(days=10))
    stored = eager.MEDIA_ROOT / _job_files(job)[0]
    call_command("purge_uploads", stdout=io.StringIO())
    assert stored.exists()
    call_command("purge_uploads", "--failed-days", "30", stdout=io.StringIO())
    assert stored.exists()
    call_command("purge_uploads", "--failed-days", "7", stdout=io.StringIO())
    assert not stored.exists()


def test_a_label_imports_upload_is_removed_after_success(
    study, lead, eager, django_capture_on_commit_callbacks
):
    make_conversation(study, "c1", n_turns=1)
    record = {"conversation": "c1", "turn": 1, "group": "g", "labels": [], "annotator": "dora"}
    upload = SimpleUploadedFile("labels.jsonl", (json.dumps(record) + "\n").encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(lead).post(
            "/api/studies/s1/annotations/import/",
            {"file": upload, "create_members": "true"},
            format="multipart",
        )
    assert response.status_code == 202
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    assert not (eager.MEDIA_ROOT / _job_files(job)[0]).exists()
