"""The database restarts under a running app (a PostgreSQL upgrade, a crash, a failover): on
a throwaway cluster of the test's own (never the machine's shared server), gunicorn with the
production environment and persistent connections (CONN_MAX_AGE) and a Celery worker.

- After a restart the very next request is served: a connection kept from before is checked
  before use (CONN_HEALTH_CHECKS), not found broken by the request's first query.
- During the outage a request gets a plain 503 (/healthz) or 500 page at once, not a hang,
  and nothing of the error's detail.
- A job running across the restart ends failed with the reason, its partial file removed,
  and the same worker runs the next job."""

from __future__ import annotations

import http.cookiejar
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import psycopg2
import pytest

from tests import slow_worker

from .conftest import ROOT, app_env, free_port, log_tail, wait_until, worker_command

pytestmark = pytest.mark.postgres  # with Redis, as production; the cluster is its own

PASSWORD = "restart-pass-123"


class Client:
    def __init__(self, base: str) -> None:
        self.base, self.jar = base, http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def call(self, path: str, data: dict | None = None) -> tuple[int, str, float]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        headers = {"Origin": self.base, "Referer": self.base + path} if data else {}
        request = urllib.request.Request(self.base + path, data=body, headers=headers)
        started = time.monotonic()
        try:
            with self.opener.open(request, timeout=30) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        return status, text, time.monotonic() - started

    def login(self, username: str) -> None:
        self.call("/accounts/login/")
        token = next(c.value for c in self.jar if c.name == "csrftoken")
        form = {"csrfmiddlewaretoken": token, "username": username, "password": PASSWORD}
        status, text, _ = self.call("/accounts/login/", form)
        assert status == 200 and 'name="password"' not in text, text[:1000]


def run(env: dict, *args: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {args[0]}: {done.stdout}{done.stderr}"
    return done.stdout


SETUP = f"""
from django.contrib.auth import get_user_model
from annotation.models import Annotation, Kind, Role
from tests.factories import make_conversation, make_group, make_study
User = get_user_model()
study = make_study("restart")
lead = User.objects.create_user("lead", password="{PASSWORD}")
study.add_member(lead, Role.LEAD, Kind.EXPERT)
alice = User.objects.create_user("alice", password="{PASSWORD}")
group = make_group(study, "g", [alice])
smell = study.taxonomy_version.types_by_code()["ambiguous_instruction"]
for i in range(40):
    for turn in make_conversation(study, f"c{{i}}", n_turns=5, group=group).turns.all():
        Annotation.submit(turn=turn, group=group, annotator=alice, types=[smell])
"""

QUEUE_EXPORT = """
from annotation.models import Job, JobKind, Study
from annotation.tasks import run_export
job = Job.objects.create(study=Study.objects.get(slug="restart"), kind=JobKind.EXPORT,
                         params={"format": "csv", "raw": True})
run_export.delay(job.pk)
print(job.pk)
"""


@pytest.fixture
def app(own_cluster, tmp_path, processes):
    """The cluster with a migrated database `cardsort` and a study, and the app's env."""
    admin = psycopg2.connect(own_cluster.url("postgres"))
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("CREATE DATABASE cardsort")
    admin.close()
    env = app_env(
        own_cluster.url("cardsort"),
        tmp_path / "data",
        MEDIA_ROOT=str(tmp_path / "media"),
        CONN_MAX_AGE="600",
        JOB_LOST_SECONDS="3",
    )
    run(env, "migrate", "--noinput")
    run(env, "collectstatic", "--noinput")
    run(env, "shell", "-c", SETUP)
    return env


def job_row(cluster, job_id: int) -> tuple[str, int, str, str]:
    """status, progress, error, result_file: read straight from the cluster."""
    conn = psycopg2.connect(cluster.url("cardsort"))
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT status, progress, error, result_file FROM annotation_job WHERE id = %s",
                [job_id],
            )
            return cursor.fetchone()
    finally:
        conn.close()


def test_gunicorn_serves_the_first_request_after_a_restart_and_fails_fast_during_it(
    app, own_cluster, processes
):
    port = free_port()
    import sys

    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application"]
    # one sync process: every request goes through the same persistent connection
    command += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "60"]
    web = processes.start("gunicorn", command, app)
    client = Client(f"http://127.0.0.1:{port}")

    def healthy() -> bool:
        try:
            return client.call("/healthz")[0] == 200
        except OSError:
            return False

    wait_until(healthy, 60, "gunicorn's /healthz", web)
    client.login("lead")
    status, text, _ = client.call("/")
    assert status == 200 and "restart" in text

    # a restart between two requests: the kept connection is dead, the next request is served
    own_cluster.stop()
    own_cluster.start()
    status, text, _ = client.call("/")
    assert status == 200, f"the first request after the restart: {status}\n{log_tail(web)}"
    assert client.call("/healthz")[0] == 200

    # during an outage: at once a 503 from /healthz and the plain 500 page elsewhere
    own_cluster.stop()
    status, text, seconds = client.call("/healthz")
    assert (status, text, seconds < 10) == (503, "unavailable\n", True)
    status, text, seconds = client.call("/")
    assert status == 500 and seconds < 10
    assert "Traceback" not in text and "psycopg2" not in text and "OperationalError" not in text
    own_cluster.start()
    status, text, _ = client.call("/")
    assert status == 200 and "restart" in text, f"after the outage: {status}\n{log_tail(web)}"
    assert client.call("/healthz")[0] == 200
    assert web.poll() is None


def test_a_job_running_across_a_restart_fails_with_its_reason_and_the_worker_carries_on(
    app, own_cluster, processes
):
    command = worker_command(f"restart-{uuid.uuid4().hex[:6]}@%h")
    # 200 rows: about 10 s
    worker = processes.start("worker", slow_worker.worker_command(0.05, command), app)
    job_id = int(run(app, "shell", "-c", QUEUE_EXPORT).split()[-1])

    def running() -> bool:
        status, progress, *_ = job_row(own_cluster, job_id)
        return status == "running" and progress > 0

    wait_until(running, 120, "the export to start", worker)
    own_cluster.stop()
    time.sleep(1)
    own_cluster.start()

    def ended() -> bool:
        return job_row(own_cluster, job_id)[0] in ("done", "failed")

    wait_until(ended, 60, "the job to end after the restart", worker)
    status, _, error, result_file = job_row(own_cluster, job_id)
    if status == "failed":
        assert "connection" in error.lower() or "terminat" in error.lower(), error
        folder = Path(app["MEDIA_ROOT"]) / "exports" / str(job_id)
        assert not folder.exists() or not list(folder.iterdir()), "a partial file was left"
    else:  # retried: then the file is complete
        text = (Path(app["MEDIA_ROOT"]) / result_file).read_text()
        assert len(text.splitlines()) == 201

    # the same worker takes the next job and finishes it
    env_fast = dict(app)
    next_id = int(run(env_fast, "shell", "-c", QUEUE_EXPORT).split()[-1])
    wait_until(
        lambda: job_row(own_cluster, next_id)[0] in ("done", "failed"), 120, "next job", worker
    )
    assert job_row(own_cluster, next_id)[0] == "done", log_tail(worker)
    assert worker.poll() is None
