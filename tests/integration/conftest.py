"""Real Celery worker processes for the integration tests: the broker the settings name
(the filesystem broker on the embedded default, Redis when CELERY_BROKER_URL says so) and
the test database, shared with the worker through DATABASE_URL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests import slow_worker

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    return f"postgres://{s['USER'] or 'postgres'}@{host}:{port}/{s['NAME']}"


@pytest.fixture
def start_worker(tmp_path, media):
    """start_worker(slow_exports=0, **env) -> a worker process; every one started is stopped
    at the end. `slow_exports` (seconds): its exports sleep that long after each row
    (tests/slow_worker.py), so a test can kill it mid-export."""
    assert not connection.settings_dict["NAME"].startswith("file:memorydb"), "needs a file DB"
    procs = []

    def start(slow_exports: float = 0, **extra_env: str) -> subprocess.Popen:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=_database_url(),
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            CARDSORT_DATA_DIR=str(settings.DATA_DIR),
            MEDIA_ROOT=str(media),
            **extra_env,
        )
        log = open(tmp_path / f"worker-{len(procs)}.log", "w")
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]
        command += ["-l", "INFO"]
        if slow_exports:
            command = slow_worker.worker_command(slow_exports, command)
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        proc.log_path = log.name
        procs.append((proc, log))
        return proc

    yield start
    for proc, log in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
