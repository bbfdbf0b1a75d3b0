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

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    return f"postgres://{s['USER'] or 'postgres'}@{host}:{port}/{s['NAME']}"


@pytest.fixture
def start_worker(tmp_path, media):
    """start_worker(**env) -> a worker process; every one started is stopped at the end."""
    assert not connection.settings_dict["NAME"].startswith("file:memorydb"), "needs a file DB"
    procs = []

    def start(**extra_env: str) -> subprocess.Popen:
        env = dict(os.environ)
        env.pop("CARDSORT_TEST_EXPORT_DELAY", None)
        env.update(
            DATABASE_URL=_database_url(),
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            CARDSORT_DATA_DIR=str(settings.DATA_DIR),
            MEDIA_ROOT=str(media),
            **extra_env,
        )
        log = open(tmp_path / f"worker-{len(procs)}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-l", "INFO"],
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
