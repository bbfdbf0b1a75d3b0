"""Upload -> Job -> Celery task -> ImportReport shown in the job partial."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation.models import MAX_IMPORT_RUNS, Conversation, Job, JobKind, JobStatus
from annotation.tasks import run_import


def _record(cid: str) -> str:
    return json.dumps(
        {
            "id": cid,
            "messages": [
                {"role": "user", "content": f"{cid}: write a parser"},
                {"role": "assistant", "content": "def parse(s): ..."},
                {"role": "user", "content": "now test it"},
                {"role": "assistant", "content": "def test_parse(): ..."},
            ],
            "metadata": {},
        }
    )


GOOD_AND_BAD = (
    _record("c1") + "\n" + '{"id": "c2", "messages": 5}\n' + _record("c3") + "\n"
).encode()


@pytest.fixture
def eager(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


def _upload(client, study, files, fmt="auto"):
    client.login(username="lead", password="pw-secret")
    data = {"format": fmt, "files": files}
    return client.post(reverse("lead_import", args=[study.slug]), data)


def _partial(client, study, job, htmx=True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.get(reverse("job_detail", args=[study.slug, job.pk]), **headers)


def test_it_stores_the_upload_and_enqueues_a_job(
    client, study, lead, settings, tmp_path, django_capture_on_commit_callbacks, monkeypatch
):
    settings.MEDIA_ROOT = tmp_path
    queued = []
    monkeypatch.setattr(run_import, "delay", lambda job_id: queued.append(job_id))
    files = [
        SimpleUploadedFile("my chats.jsonl", GOOD_AND_BAD),
        SimpleUploadedFile("more.jsonl", _record("c9").encode()),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(client, study, files, fmt="native")
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.status, job.created_by) == (JobKind.IMPORT, JobStatus.QUEUED, lead)
    assert queued == [job.pk]
    assert job.params["format"] == "native"
    assert [f["name"] for f in job.params["files"]] == ["my chats.jsonl", "more.jsonl"]
    stored = sorted(p.name for p in (tmp_path / "imports" / str(job.pk)).iterdir())
    assert stored == ["1-my_chats.jsonl", "2-more.jsonl"]
    assert (tmp_path / job.params["files"][0]["path"]).read_bytes() == GOOD_AND_BAD


def test_it_refuses_an_upload_without_files(client, study, lead, eager):
    client.login(username="lead", password="pw-secret")
    response = client.post(
        reverse("lead_import", args=[study.slug]), {"format": "auto"}, follow=True
    )
    assert "Choose one or more files" in response.content.decode()
    assert not Job.objects.exists()


def test_it_runs_the_import_and_shows_the_report(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, study, [SimpleUploadedFile("my chats.jsonl", GOOD_AND_BAD)])
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    assert job.total == len(GOOD_AND_BAD)
    assert job.progress == job.total
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["c1", "c3"]
    assert (job.result["conversations"], job.result["turns"], job.result["rejected"]) == (2, 4, 1)

    response = _partial(client, study, job)
    body = response.content.decode()
    assert (
        "Imported 2 conversations (4 turns) from 1 file(s); rejected 1 records; 3 records" in body
    )
    # the lead's own file name and line, not the stored copy's
    assert "my chats.jsonl:2" in body
    assert "1-my_chats" not in body
    assert "hx-trigger" not in body  # finished: polling stops
    assert response["HX-Trigger"] == "job-finished"


def test_it_fails_a_job_that_imported_nothing(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    bad = b'{"id": "c1", "messages": 5}\nnot json\n'
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, study, [SimpleUploadedFile("broken.jsonl", bad)], fmt="native")
    job = Job.objects.get()
    assert job.status == JobStatus.FAILED
    assert "Nothing could be imported" in job.error
    body = _partial(client, study, job).content.decode()
    assert "Nothing could be imported" in body
    assert "broken.jsonl:1" in body and "broken.jsonl:2" in body
    assert "hx-trigger" not in body


def test_it_shows_the_error_of_a_crashed_import(
    client, study, lead, eager, django_capture_on_commit_callbacks, monkeypatch
):
    import annotation.importers

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(annotation.importers, "import_files", crash)
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, study, [SimpleUploadedFile("a.jsonl", GOOD_AND_BAD)])
    job = Job.objects.get()
    assert job.status == JobStatus.FAILED
    assert "OSError: disk full" in _partial(client, study, job).content.decode()


def test_it_polls_a_running_job_and_shows_its_progress(client, study, lead):
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, status=JobStatus.RUNNING)
    Job.objects.filter(pk=job.pk).update(progress=50, total=200)
    client.login(username="lead", password="pw-secret")
    body = _partial(client, study, job).content.decode()
    assert 'hx-trigger="every 1s"' in body
    assert "25%" in body
    assert "Waiting for a worker" not in body


def test_it_says_when_no_worker_picked_a_job_up(client, study, lead, settings):
    settings.JOB_WAITING_WARNING_SECONDS = 10
    old = Job.objects.create(
        study=study, kind=JobKind.IMPORT, created_at=timezone.now() - timedelta(seconds=60)
    )
    fresh = Job.objects.create(study=study, kind=JobKind.IMPORT)
    client.login(username="lead", password="pw-secret")
    body = _partial(client, study, old).content.decode()
    assert "Waiting for a worker: no worker has picked this job up yet." in body
    assert "Is the Celery worker running?" in body
    assert 'hx-trigger="every 1s"' in body
    assert "Waiting for a worker" not in _partial(client, study, fresh).content.decode()
    # the page lists both jobs
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert f'id="job-{old.pk}"' in page and f'id="job-{fresh.pk}"' in page


def test_it_does_not_run_a_finished_job_again(study, monkeypatch):
    import annotation.importers

    def must_not_run(*args, **kwargs):
        raise AssertionError("imported twice")

    monkeypatch.setattr(annotation.importers, "import_files", must_not_run)
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, params={"files": []})
    job.finish({"conversations": 3})
    run_import(job.pk)
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.DONE, {"conversations": 3})


def test_it_reruns_a_job_a_lost_worker_left_running_without_duplicates(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    # the job below is made to look lost after it ran; a lost job never got to the end that
    # removes its uploads (CARDSORT_UPLOAD_KEEP_DAYS = 0), so keep them as it would have
    eager.CARDSORT_UPLOAD_KEEP_DAYS = 1
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, study, [SimpleUploadedFile("my chats.jsonl", GOOD_AND_BAD)])
    job = Job.objects.get()
    # as if the worker died after the first batch: the job still says running
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, finished_at=None)
    older = Conversation.objects.create(
        study=study,
        external_id="kept",
        source_format="native",
        source_file="my chats.jsonl",
        created_at=job.started_at - timedelta(days=1),
    )
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result["conversations"] == 2
    ids = sorted(Conversation.objects.values_list("external_id", flat=True))
    assert ids == ["c1", "c3", "kept"]
    assert Conversation.objects.filter(pk=older.pk).exists()


def test_the_conversations_page_shows_a_lost_import_as_resumed(
    client, study, lead, settings, monkeypatch, django_capture_on_commit_callbacks
):
    # issue 13c: only the study page reaped lost jobs; this page kept saying "running".
    # Issue 10: a lost conversation import is queued again to resume, not failed.
    settings.JOB_LOST_SECONDS = 60
    queued = []
    monkeypatch.setattr(run_import, "delay", queued.append)
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, params={"files": [], "runs": 1})
    job.start()
    stale = timezone.now() - timedelta(minutes=10)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=stale, started_at=stale)
    client.login(username="lead", password="pw-secret")

    with django_capture_on_commit_callbacks(execute=True):
        page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()

    assert "Its worker stopped; queued again to resume where it was." in page
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert queued == [job.pk]


def test_the_job_poller_fails_a_lost_import_after_its_last_run(client, study, lead, settings):
    settings.JOB_LOST_SECONDS = 60
    params = {"files": [], "runs": MAX_IMPORT_RUNS}
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, params=params)
    job.start()
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    client.login(username="lead", password="pw-secret")

    body = _partial(client, study, job).content.decode()

    assert f"stopped (killed or crashed) {MAX_IMPORT_RUNS} times" in body
    assert "hx-trigger" not in body
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def _labels(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_it_imports_annotations_as_a_job_and_lists_the_refused_records(
    client, study, lead, eager, django_capture_on_commit_callbacks
):
    from tests.factories import make_conversation

    conversation = make_conversation(study, "c1", n_turns=2)
    base = {"conversation": "c1", "group": "trio", "labels": ["code_rollback"]}
    upload = _labels(
        base | {"turn": 1, "annotator": "dora"},
        base | {"turn": 1, "annotator": "emil"},
        base | {"turn": 1, "annotator": "fay", "labels": []},
        base | {"turn": 9, "annotator": "fay"},
    )
    client.login(username="lead", password="pw-secret")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("lead_import_annotations", args=[study.slug]),
            {"file": SimpleUploadedFile("team labels.jsonl", upload), "create_members": "1"},
        )
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.status) == (JobKind.LABEL_IMPORT, JobStatus.DONE)
    assert "what" not in job.params
    assert (job.result["imported"], job.result["rejected"]) == (3, 1)
    # the three were seated before the first label: fay's differing label disputes the card
    assert conversation.turns.get(index=1).states.get().status == "disputed"

    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert "Import of annotations" in page
    assert "3 records imported, 1 rejected, 3 annotators created, 1 groups created" in page
    assert "team labels.jsonl:4: turn: 9 out of range" in page
    assert "imports/" not in page  # the lead's file name, not the stored copy's
    body = _partial(client, study, job).content.decode()
    assert "team labels.jsonl:4" in body and "hx-trigger" not in body
