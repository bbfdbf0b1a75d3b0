"""The jobs' files go through Django's storage (annotation/storage.py), never a path under
MEDIA_ROOT: with STORAGES["default"] switched to an in-memory storage (as an S3 bucket would
be), an import of files and a folder through the page, a label import through the API, an
export and its downloads work end to end, and MEDIA_ROOT stays empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import InMemoryStorage, default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import storage
from annotation.models import Annotation, Conversation, Job, JobKind, JobStatus
from annotation.tasks import run_export
from tests.factories import make_conversation, token_client
from tests.importers.agent_files import SPECSTORY_V2

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory_storage(settings, media):
    """Job files in memory; MEDIA_ROOT an empty folder the test checks stays empty."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    settings.CELERY_TASK_ALWAYS_EAGER = True
    default_storage.exists("anything")  # the lazy object set up with the new setting
    assert isinstance(default_storage._wrapped, InMemoryStorage)
    yield default_storage
    assert not list(Path(media).rglob("*")), "something was written under MEDIA_ROOT"


def _record(cid: str) -> str:
    turns = [{"role": "user", "content": f"{cid}: write a parser"}]
    turns.append({"role": "assistant", "content": "def parse(s): ..."})
    return json.dumps({"id": cid, "messages": turns, "metadata": {}})


def _content(response) -> bytes:
    return b"".join(response.streaming_content)


def test_a_conversation_import_of_files_and_a_folder_is_stored_read_and_its_uploads_removed(
    client, study, lead, memory_storage, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    lines = _record("c1") + "\n" + '{"id": "c2", "messages": 5}\n'
    data = {"format": "auto", "files": [SimpleUploadedFile("mine.jsonl", lines.encode())]}
    data["folder"] = [
        SimpleUploadedFile("2026-01-25_22-47-22Z-fix.md", SPECSTORY_V2.encode()),
        SimpleUploadedFile("notes.md", b"# my notes\n"),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("lead_import", args=[study.slug]), data)
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    assert Conversation.objects.count() == 2 and job.result["rejected"] == 1
    assert job.result["errors"][0].startswith("mine.jsonl:2:"), "the lead's name, not our copy's"
    assert job.result["skipped"] == ["notes.md: a Markdown file that is not a SpecStory export"]
    # the uploads went once the import succeeded; the rejected records stay, in the storage
    assert storage.stored_files(f"imports/{job.pk}") == [f"imports/{job.pk}/rejected.txt"]
    download = client.get(reverse("job_download", args=[study.slug, job.pk]))
    assert download.status_code == 200
    assert _content(download).decode().startswith("mine.jsonl:2:")


def test_a_label_import_through_the_api_reads_its_upload_from_the_storage(
    study, lead, memory_storage, django_capture_on_commit_callbacks
):
    make_conversation(study, "c1", n_turns=1)
    base = {"conversation": "c1", "turn": 1, "group": "trio", "labels": []}
    records = [base | {"annotator": "dora"}, base | {"annotator": "emil"}]
    upload = SimpleUploadedFile(
        "labels.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode()
    )
    api = token_client(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"/api/studies/{study.slug}/annotations/import/",
            {"file": upload, "create_members": "true"},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = Job.objects.get()
    assert (job.kind, job.status) == (JobKind.LABEL_IMPORT, JobStatus.DONE), job.error
    assert job.params["files"][0]["path"].startswith(f"imports/{job.pk}/")
    assert Annotation.objects.count() == 2
    state = api.get(f"/api/studies/{study.slug}/jobs/{job.pk}/").json()
    assert (state["kind"], state["result"]["imported"]) == ("label_import", 2)
    assert storage.stored_files(f"imports/{job.pk}") == [], "its upload removed"


def test_an_export_is_stored_and_downloaded_from_the_storage(
    client, study, lead, labelled, memory_storage, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("job_export", args=[study.slug]), {"format": "csv"})
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    assert job.result_file == f"exports/{job.pk}/s1-gold.csv"
    with memory_storage.open(job.result_file, "rb") as stored:
        content = stored.read()
    assert len(content.decode().splitlines()) == 1 + 6 == 1 + job.result["rows"]
    page = client.get(reverse("job_download", args=[study.slug, job.pk]))
    assert page.status_code == 200 and _content(page) == content
    assert 'filename="s1-gold.csv"' in page["Content-Disposition"]
    api = token_client(lead)
    response = api.get(f"/api/studies/{study.slug}/jobs/{job.pk}/download/")
    assert response.status_code == 200 and _content(response) == content

    memory_storage.delete(job.result_file)  # gone from the bucket: a 404 saying so
    assert client.get(reverse("job_download", args=[study.slug, job.pk])).status_code == 404


def test_a_failed_export_stores_nothing_and_its_scratch_folder_goes(
    study, labelled, memory_storage, monkeypatch
):
    from annotation import exports

    seen = []

    def half_written(study, path, fmt, **options):
        Path(path).write_text("turn,labels\n1,")
        seen.append(Path(path))
        raise OSError("disk full")

    monkeypatch.setattr(exports, "write_gold", half_written)
    job = Job.objects.create(study=study, kind=JobKind.EXPORT, params={"format": "csv"})
    run_export(job.pk)
    job.refresh_from_db()
    assert (job.status, job.error, job.result_file) == (JobStatus.FAILED, "OSError: disk full", "")
    assert job.finished_at is not None
    assert storage.stored_files(f"exports/{job.pk}") == []
    assert seen and not seen[0].parent.exists(), "the run's scratch folder is removed"


def test_a_stored_name_outside_a_job_folder_is_never_served_nor_removed(
    client, study, lead, memory_storage
):
    memory_storage.save("secret.txt", ContentFile(b"not yours"))
    job = Job.objects.create(
        study=study,
        kind=JobKind.IMPORT,
        status=JobStatus.DONE,
        result_file="imports/../secret.txt",
        params={"files": [{"path": "imports/1/../../secret.txt", "name": "x"}]},
    )
    client.force_login(lead)
    assert client.get(reverse("job_download", args=[study.slug, job.pk])).status_code == 404
    from annotation.uploads import remove_uploads

    assert remove_uploads(job) == 0 and memory_storage.exists("secret.txt")
