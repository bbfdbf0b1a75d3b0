"""The import page takes a folder (webkitdirectory) besides files: its files of a known
format are imported, the others skipped and listed in the job's report; lead only."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Conversation, Job, JobStatus, Role
from tests.importers.agent_files import SPECSTORY_LEGACY, SPECSTORY_V2, claude_code_session


@pytest.fixture
def eager(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


def _folder():
    return [
        SimpleUploadedFile("2026-01-25_22-47-22Z-fix.md", SPECSTORY_V2.encode()),
        SimpleUploadedFile(".DS_Store", b"\x00\x00\x00\x01Bud1"),
        SimpleUploadedFile("2025-10-01_23-30Z-csv.md", SPECSTORY_LEGACY.encode()),
        SimpleUploadedFile("notes.md", b"# my notes\n"),
    ]


def test_a_folder_is_imported_and_its_unknown_files_listed_as_skipped(
    client,
    study,
    lead,
    eager,
    django_capture_on_commit_callbacks,
):
    client.force_login(lead)
    session = "".join(json.dumps(x) + "\n" for x in claude_code_session()).encode()
    data = {"format": "auto", "files": [SimpleUploadedFile("s.jsonl", session)]}
    data["folder"] = _folder()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("lead_import", args=[study.slug]), data)
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    # the hidden file is not even stored
    assert [f["name"] for f in job.params["folder"]["files"]] == [
        "2026-01-25_22-47-22Z-fix.md",
        "2025-10-01_23-30Z-csv.md",
        "notes.md",
    ]
    assert sorted(Conversation.objects.values_list("source_format", flat=True)) == [
        "claude-code",
        "specstory",
        "specstory",
    ]
    assert job.result["skipped"] == ["notes.md: a Markdown file that is not a SpecStory export"]
    body = client.get(
        reverse("job_detail", args=[study.slug, job.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Skipped files, of no known format (1)" in body
    assert "notes.md: a Markdown file" in body


def test_the_page_offers_a_folder(client, study, lead):
    client.force_login(lead)
    body = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert 'name="folder" webkitdirectory' in body


def test_an_annotator_cannot_import_a_folder(client, study, lead, alice, eager):
    study.add_member(alice, Role.ANNOTATOR)
    client.force_login(alice)
    response = client.post(
        reverse("lead_import", args=[study.slug]), {"format": "auto", "folder": _folder()}
    )
    assert response.status_code == 403
    assert not Job.objects.exists() and not Conversation.objects.exists()


def test_an_outsider_gets_a_404(client, study, lead, charlie, eager):
    client.force_login(charlie)
    response = client.post(
        reverse("lead_import", args=[study.slug]), {"format": "auto", "folder": _folder()}
    )
    assert response.status_code == 404
    assert not Job.objects.exists()
