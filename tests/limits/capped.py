"""Run a management command in a child process under a memory cap (issue 24): its address
space limited with RLIMIT_AS, so a bomb that escapes the importers' limits makes that child
fail (MemoryError) instead of taking the machine, and its own peak RSS measured: VmHWM of
/proc/self/status, written by the child as it exits, the high-water mark of its own memory
since exec. Not the rusage's ru_maxrss: Linux carries the forked image's RSS across exec
into it, so a child of a large pytest process (late in the suite) reads as large as its
parent whatever it did.
The child uses the test database (a transactional test's committed rows)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
GIB = 1024**3
# The worker's cap in the tests, and the most its peak RSS may be.
ADDRESS_SPACE_CAP = int(1.5 * GIB)
PEAK_RSS_LIMIT = 1 * GIB


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss: int  # bytes


def database_url() -> str:
    s = connection.settings_dict
    assert not s["NAME"].startswith("file:memorydb"), "needs a file database"
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    return f"postgres://{s['USER'] or 'postgres'}@{host}:{port}/{s['NAME']}"


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))


def run_capped(folder: Path, *args: str, timeout: float = 300, **env: str) -> Run:
    """`manage.py *args` in a child capped at ADDRESS_SPACE_CAP; its output goes to files
    (a pipe could fill up and block the child while we wait for it)."""
    out, err = folder / "capped.out", folder / "capped.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        hwm = folder / "capped.hwm"
        hwm.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(hwm), *args],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": database_url(), **env},
            stdout=stdout,
            stderr=stderr,
            preexec_fn=_cap_memory,
        )
        try:
            _, status, usage = _wait4(proc, timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    # the child's own high-water mark; without it (killed before it could write), the rusage
    peak = int(hwm.read_text()) if hwm.exists() else usage.ru_maxrss * 1024  # KiB on Linux
    return Run(proc.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"),
               peak)  # fmt: skip


# manage.py run in the child, writing VmHWM (bytes) to argv[1] as the interpreter exits
_CHILD = """
import atexit, runpy, sys

def _hwm(path=sys.argv[1]):
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(kib * 1024))

atexit.register(_hwm)
sys.argv = ["manage.py", *sys.argv[2:]]
runpy.run_path("manage.py", run_name="__main__")
"""


def _wait4(proc: subprocess.Popen, timeout: float):
    import time

    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return pid, status, usage
        if time.monotonic() > deadline:
            raise TimeoutError(f"{proc.args} still running after {timeout} s")
        time.sleep(0.05)
