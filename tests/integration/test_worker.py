"""A real Celery worker process picks up an import job from the configured broker (the
filesystem broker on the embedded default, Redis when CELERY_BROKER_URL says so) and writes
to the same database the test reads. Nothing is eager here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import Conversation, Job, JobKind, JobStatus
from tests.conftest import make_study

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    return f"postgres://{s['USER'] or 'postgres'}@{host}:{port}/{s['NAME']}"


@pytest.fixture
def worker(tmp_path):
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CARDSORT_DATA_DIR=str(settings.DATA_DIR),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
    )
    log = open(tmp_path / "worker.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-l", "INFO"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_a_real_worker_runs_an_import_job(worker, tmp_path):
    assert not connection.settings_dict["NAME"].startswith("file:memorydb"), "needs a file DB"
    study = make_study("live")
    media = Path(settings.MEDIA_ROOT) / "imports" / "it"
    media.mkdir(parents=True, exist_ok=True)
    record = {
        "id": "c1",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
    }
    (media / "one.jsonl").write_text(json.dumps(record) + "\n{broken\n")
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
    log = (tmp_path / "worker.log").read_text()
    assert job.status == JobStatus.DONE, f"job {job.status}: {job.error}\n{log[-3000:]}"
    assert job.result["conversations"] == 1
    assert any("one.jsonl:2" in e for e in job.result["errors"])
    assert Conversation.objects.filter(study=study, external_id="c1").count() == 1
