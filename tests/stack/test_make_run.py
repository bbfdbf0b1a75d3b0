"""`make run` (scripts/run): a worker and the development server on the port asked for, and a
Ctrl-C that stops each once. The Makefile's old `trap 'kill 0' EXIT INT TERM` re-entered on
its own signal: 846 SIGTERMs reached the worker and it ended in a RecursionError."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return True  # an HTTP answer of any status: the server is up
    except OSError:
        return False
    return True


def processes_with(marker: str) -> list[int]:
    """The processes whose environment holds `marker` (this run's data folder): every child
    and grandchild of the run, whatever their process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.fixture
def run_env(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CARDSORT_TEST_")
        and k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER", "PORT")
    }
    data_dir = tmp_path / "data"
    env.update(DEBUG="1", CARDSORT_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return env


def test_make_run_passes_its_port_to_the_demo_and_the_server():
    out = subprocess.run(
        ["make", "-n", "run", "PORT=8061"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "manage.py demo --port 8061" in out
    assert "scripts/run --port 8061" in out
    assert "8000" not in out


def test_ctrl_c_stops_the_worker_once_and_leaves_no_process(run_env, tmp_path):
    port = free_port()
    log_path = tmp_path / "run.log"
    marker = run_env["CARDSORT_DATA_DIR"]
    with open(log_path, "w") as log:
        run = subprocess.Popen(
            [sys.executable, "scripts/run", "--port", str(port)],
            cwd=ROOT, env=run_env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (
            answers(f"http://127.0.0.1:{port}/healthz") and "ready." in log_path.read_text()
        ):
            assert run.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.3)
        assert len(processes_with(marker)) >= 2  # the worker and the server at least

        started = time.monotonic()
        run.send_signal(signal.SIGINT)  # a Ctrl-C reaches the script (the children have sessions)
        run.wait(timeout=15)
        took = time.monotonic() - started
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)

    text = log_path.read_text()
    assert took < 8, text
    assert text.count("Warm shutdown") == 1, text
    assert "Cold shutdown" not in text, text
    assert "RecursionError" not in text, text
    assert "Traceback" not in text, text
    time.sleep(0.5)
    assert processes_with(marker) == [], text
    assert not answers(f"http://127.0.0.1:{port}/healthz")
