"""Processes for the fault tests: real Celery workers (prefork, as in production) that a test
may SIGKILL, a throwaway PostgreSQL cluster of the test's own (initdb + pg_ctl on a temporary
folder, never the machine's shared server) that a test may stop and start, and gunicorn."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path(os.environ.get("CARDSORT_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_env(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The production environment for a child process (DEBUG off, its own key)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARDSORT_TEST_")}
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_HSTS_SECONDS="0",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CARDSORT_DATA_DIR=str(data_dir),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


class Processes:
    """Started processes, each in its own process group, all stopped at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.procs = folder, []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        log_path = self.folder / f"{name}-{len(self.procs)}.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        proc.log_path = log_path
        self.procs.append(proc)
        return proc

    def kill_group(self, proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                self.kill_group(proc, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill_group(proc)
                proc.wait(timeout=10)


@pytest.fixture
def processes(tmp_path):
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


def worker_command(node: str, pool: str = "prefork") -> list[str]:
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-n", node, "-l", "INFO"]
    if pool == "prefork":
        return command + ["--pool", "prefork", "--concurrency", "1"]
    return command + ["--pool", pool]


def pool_children(proc: subprocess.Popen) -> list[int]:
    """The pids of a prefork worker's pool processes (its main process's children)."""
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def log_tail(proc: subprocess.Popen, lines: int = 60) -> str:
    text = Path(proc.log_path).read_text(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


class Cluster:
    """A PostgreSQL cluster in a temporary folder, run by the `postgres` OS user (initdb
    refuses root), listening on 127.0.0.1 on a free port, trust authentication."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="cardsort-faults-pg-", dir="/tmp"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.as_postgres = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [*self.as_postgres, *command], capture_output=True, text=True, cwd=self.folder
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: {done.stdout}{done.stderr}")
        return done

    def init(self) -> None:
        self.run(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}"
        self.run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options,
            "-l", str(self.folder / "server.log"), "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self.run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def destroy(self) -> None:
        self.run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop", check=False
        )
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def own_cluster():
    """A throwaway cluster. These tests run in the PostgreSQL pass only (marked `postgres`),
    on machines that run the server: missing binaries are a setup error that fails the test
    with what to set, never a silent skip."""
    for binary in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / binary).exists():
            pytest.fail(f"no PostgreSQL server binaries in {PG_BIN} (set CARDSORT_PG_BIN)")
    if os.geteuid() == 0 and not shutil.which("runuser"):
        pytest.fail("running as root and no runuser to run initdb as the postgres user")
    cluster = Cluster()
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


def wait_until(condition, seconds: float, what: str, proc=None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    tail = f"\n{log_tail(proc)}" if proc is not None else ""
    raise AssertionError(f"{what}: not within {seconds} s{tail}")
