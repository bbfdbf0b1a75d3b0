"""A job can never stay "running" forever: reap_lost fails the jobs whose worker stopped
giving signs of life and removes what they left half-written."""

from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from annotation import tasks
from annotation.models import (
    LOST_IMPORT_ERROR,
    LOST_JOB_ERROR,
    MAX_IMPORT_RUNS,
    RESUMED_MESSAGE,
    Conversation,
    Job,
    JobKind,
    JobStatus,
)
from tests.factories import make_conversation, make_study

pytestmark = pytest.mark.django_db


def running(study, kind=JobKind.EXPORT, seconds_ago=0, **fields) -> Job:
    job = Job.objects.create(study=study, kind=kind, params={"format": "csv"}, **fields)
    job.start()
    then = timezone.now() - timedelta(seconds=seconds_ago)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=then, started_at=then)
    return job


def test_it_fails_a_lost_export_and_removes_what_it_stored(study, media, settings):
    settings.JOB_LOST_SECONDS = 120
    lost = running(study, seconds_ago=300)
    name = default_storage.save(f"exports/{lost.pk}/s1-gold.csv", ContentFile(b"turn,labels\n1,"))
    part = media / name
    assert part.exists()
    fresh = running(study, seconds_ago=5)
    queued = Job.objects.create(study=study, kind=JobKind.EXPORT)
    queued.created_at = timezone.now() - timedelta(hours=1)
    queued.save()

    assert tasks.reap_lost_jobs() == 1
    lost.refresh_from_db()
    assert (lost.status, lost.error) == (JobStatus.FAILED, LOST_JOB_ERROR)
    assert lost.finished_at is not None
    assert not part.exists()
    fresh.refresh_from_db()
    queued.refresh_from_db()
    assert (fresh.status, queued.status) == (JobStatus.RUNNING, JobStatus.QUEUED)
    assert tasks.reap_lost_jobs() == 0


def test_the_threshold_can_be_given(study, media):
    job = running(study, seconds_ago=5)
    assert tasks.reap_lost_jobs(older_than=60) == 0
    assert tasks.reap_lost_jobs(older_than=1) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def test_a_job_that_beats_is_not_lost(study, media):
    job = running(study, seconds_ago=300)
    job.beat()
    assert tasks.reap_lost_jobs(older_than=60) == 0
    job.set_progress(10)
    job.refresh_from_db()
    assert timezone.now() - job.heartbeat_at < timedelta(seconds=5)


def lost_import(study, runs: int) -> Job:
    files = [{"path": "imports/1/1-a.jsonl", "name": "a.jsonl"}]
    job = Job.objects.create(
        study=study, kind=JobKind.IMPORT, params={"format": "auto", "files": files, "runs": runs}
    )
    job.start()
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    return job


def test_a_lost_import_at_its_last_run_takes_exactly_its_conversations_with_it(study, media):
    job = lost_import(study, runs=MAX_IMPORT_RUNS)
    written = make_conversation(study, "from-a")
    Conversation.objects.filter(pk=written.pk).update(source_file="a.jsonl", import_job=job)
    # the same file name, written since the job started, but not by it: stays
    earlier = make_conversation(study, "earlier")
    Conversation.objects.filter(pk=earlier.pk).update(source_file="a.jsonl")
    assert tasks.reap_lost_jobs(older_than=60) == 1
    assert list(Conversation.objects.all()) == [earlier]
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.FAILED, LOST_IMPORT_ERROR)


def test_a_lost_import_with_runs_left_is_queued_again_and_keeps_what_it_wrote(
    study, media, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(tasks.run_import, "delay", queued.append)
    job = lost_import(study, runs=1)
    written = make_conversation(study, "from-a")
    Conversation.objects.filter(pk=written.pk).update(import_job=job)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.reap_lost_jobs(older_than=60) == 1
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.QUEUED, RESUMED_MESSAGE)
    assert queued == [job.pk]
    assert list(Conversation.objects.all()) == [written]
    assert not Conversation.objects.visible().exists()  # until the resumed job is done
    assert tasks.reap_lost_jobs(older_than=60) == 0  # queued, not lost


def test_the_study_page_reaps_lost_jobs(client, study, lead, media, settings):
    settings.JOB_LOST_SECONDS = 60
    job = running(study, seconds_ago=600)
    client.force_login(lead)
    html = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "The worker running this job stopped (killed or crashed)" in html
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_running_task_beats_from_its_own_thread(monkeypatch):
    # one step of a job (an axis's statistics) may outlast the threshold without progress
    monkeypatch.setattr(tasks, "_heartbeat_seconds", lambda: 0.05)
    job = Job.objects.create(study=make_study(), kind=JobKind.AGREEMENT)
    job.start()
    started = Job.objects.get(pk=job.pk).heartbeat_at
    worker_request = SimpleNamespace(called_directly=False, is_eager=False)
    with tasks._heartbeat(job, worker_request):
        time.sleep(0.5)
    beaten = Job.objects.get(pk=job.pk).heartbeat_at
    assert beaten > started + timedelta(seconds=0.2)
    time.sleep(0.2)
    assert Job.objects.get(pk=job.pk).heartbeat_at == beaten  # the thread stopped with the task
