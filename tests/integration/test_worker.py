"""A real Celery worker process picks up an import job from the configured broker (the
filesystem broker on the embedded default, Redis when CELERY_BROKER_URL says so) and writes
to the same database the test reads. Nothing is eager here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from annotation.models import Conversation, Job, JobKind, JobStatus
from tests.factories import make_study

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_real_worker_runs_an_import_job(start_worker, media):
    worker = start_worker()
    study = make_study("live")
    imports = media / "imports" / "it"
    imports.mkdir(parents=True)
    record = {
        "id": "c1",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
    }
    (imports / "one.jsonl").write_text(json.dumps(record) + "\n{broken\n")
    job = Job.objects.create(
        study=study,
        kind=JobKind.IMPORT,
        params={"format": "auto", "files": [{"path": "imports/it/one.jsonl", "name": "one.jsonl"}]},
    )
    from annotation.tasks import run_import

    run_import.delay(job.pk)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            break
        time.sleep(0.5)
    log = Path(worker.log_path).read_text()
    assert job.status == JobStatus.DONE, f"job {job.status}: {job.error}\n{log[-3000:]}"
    assert job.result["conversations"] == 1
    assert any("one.jsonl:2" in e for e in job.result["errors"])
    assert Conversation.objects.filter(study=study, external_id="c1").count() == 1
