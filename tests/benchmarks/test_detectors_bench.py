"""The detector benchmark (benchmarks/detectors_bench.py) still runs end to end: a tiny run
generates its conversations, runs all four detectors and prints every figure it promises.
The figures themselves are not checked (speed belongs in the benchmark's output, never in a
timed assertion), only that each detector judged and flagged some turns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]


def test_it_prints_every_detectors_figures():
    command = [sys.executable, "benchmarks/detectors_bench.py", "--turns", "400", "--seed", "3"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"^400 turns in \d+ conversations", out.stdout, re.M), out.stdout
    assert re.search(
        r"^floor \(scan fences \+ split words\):\s+\d+\.\d\d s, cpu \d+\.\d\d s$", out.stdout, re.M
    )
    rows = re.findall(
        r"^  ([\w-]+)@1\s+(\d+)\s+(\d+)\s+\d+\.\d\d\s+\d+\.\d\d\s+\d+\s+\d+\.\dx$", out.stdout, re.M
    )
    assert sorted(r[0] for r in rows) == [
        "code-rollback",
        "must-not-violation",
        "repetitive-response",
        "signature-mismatch",
    ], out.stdout
    for name, judged, flagged in rows:
        assert int(judged) > 0 and int(flagged) > 0, (name, out.stdout)
    assert re.search(
        r"^all four: \d+\.\d\d s wall, \d+\.\d\d s cpu .* the floor \(cpu \d+\.\dx\)$",
        out.stdout,
        re.M,
    )
    assert "aim: all four over 100,000 turns < 60 s" in out.stdout
    assert re.search(r"^load average \(1 min\) before \d+\.\d\d, after \d+\.\d\d", out.stdout, re.M)
