"""Agreement and export jobs on a real Celery worker process (the filesystem broker on the
embedded default, Redis when CELERY_BROKER_URL says so), and what happens when the worker
is SIGKILLed in the middle of an export: no file that looks finished, the job reaped as
failed, its temporary file removed, and a fresh worker exports again.

The export is slowed down by starting that worker through tests/slow_worker.py (seconds per
row) so the kill lands mid-export whatever the machine's speed."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from django.conf import settings
from django.utils import timezone

from annotation.agreement.data import data_stamp
from annotation.models import LOST_JOB_ERROR, Annotation, Job, JobKind, JobStatus
from annotation.tasks import reap_lost_jobs, run_agreement, run_export
from tests.factories import make_conversation, make_group, make_study, make_user
from tests.report.helpers import named

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

N_CONVERSATIONS, N_TURNS = 40, 5  # 200 cards


@pytest.fixture
def labelled_study():
    study = make_study("live")
    alice, bob = make_user("alice"), make_user("bob")
    group = make_group(study, "g", [alice, bob])
    by_code = study.taxonomy_version.types_by_code()
    smells = [by_code["ambiguous_instruction"], by_code["code_rollback"]]
    for i in range(N_CONVERSATIONS):
        for turn in make_conversation(study, f"c{i}", n_turns=N_TURNS, group=group).turns.all():
            Annotation.submit(turn=turn, group=group, annotator=alice, types=smells[: i % 3])
            Annotation.submit(turn=turn, group=group, annotator=bob, types=smells[: i % 2])
    return study


def wait_for(job: Job, condition, seconds: float, log: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if condition(job):
            return
        time.sleep(0.2)
    text = Path(log).read_text()[-3000:]
    raise AssertionError(f"job {job.pk} still {job.status} at {job.progress}/{job.total}\n{text}")


def test_a_real_worker_runs_an_agreement_job(start_worker, labelled_study):
    # left running by a worker that died long ago: the new worker reaps it when it starts
    lost = Job.objects.create(study=labelled_study, kind=JobKind.EXPORT, params={})
    lost.start()
    long_ago = timezone.now() - timedelta(seconds=settings.JOB_LOST_SECONDS + 60)
    Job.objects.filter(pk=lost.pk).update(heartbeat_at=long_ago)
    worker = start_worker()
    job = Job.objects.create(
        study=labelled_study, kind=JobKind.AGREEMENT, params={"round": 1, "n_boot": 100}
    )
    run_agreement.delay(job.pk)
    wait_for(job, lambda j: j.is_finished, 90, worker.log_path)
    assert job.status == JobStatus.DONE, job.error
    report = job.result["axes"]["smell"]["report"]
    assert (report["n_cards"], report["n_annotations"]) == (200, 400)
    assert named(report["pairs"])["alice|bob"]["cohen_kappa_ci"] is not None
    # the kept count of label writes (StudyFigures): 400 labels written, none since
    assert job.result["data_stamp"] == data_stamp(labelled_study)
    assert job.result["data_stamp"]["label_writes"] >= 400
    lost.refresh_from_db()
    assert (lost.status, lost.error) == (JobStatus.FAILED, LOST_JOB_ERROR)


def test_a_killed_export_leaves_no_file_and_is_reaped_then_a_new_worker_exports(
    start_worker, labelled_study, media
):
    slow = start_worker(slow_exports=0.05)  # 200 rows: ~10 s
    job = Job.objects.create(
        study=labelled_study, kind=JobKind.EXPORT, params={"format": "csv", "raw": False}
    )
    run_export.delay(job.pk)
    wait_for(job, lambda j: j.progress > 0, 90, slow.log_path)
    assert job.status == JobStatus.RUNNING and job.progress < job.total == 200
    slow.kill()  # SIGKILL: no cleanup runs in the worker
    slow.wait(timeout=10)

    folder = media / "exports" / str(job.pk)
    target = folder / "live-gold.csv"
    assert not target.exists()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # nobody knows yet
    assert reap_lost_jobs(older_than=0) == 1
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.FAILED, LOST_JOB_ERROR)
    assert not folder.exists() or not list(folder.iterdir()), "nothing stored of it"

    fresh = start_worker()
    again = Job.objects.create(
        study=labelled_study, kind=JobKind.EXPORT, params={"format": "parquet", "raw": False}
    )
    run_export.delay(again.pk)
    wait_for(again, lambda j: j.is_finished, 90, fresh.log_path)
    assert again.status == JobStatus.DONE, again.error
    frame = pd.read_parquet(media / again.result_file)
    assert len(frame) == 200 and set(frame["labels_alice"].map(len)) == {0, 1, 2}
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED  # the killed job was not run again
