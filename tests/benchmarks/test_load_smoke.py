"""The load test (benchmarks/load_test.py) still runs end to end: a tiny run on SQLite builds
the study, starts gunicorn, logs annotators in, replays the card's htmx requests under both
profiles, and finds every accepted label stored exactly once. The timings themselves are not
checked (speed belongs in the benchmark's output, never in a timed assertion): only that every
figure it promises is printed and that nothing failed or was lost."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# a benchmark's script run tiny; its subprocess may take 900 s on a loaded machine
pytestmark = [pytest.mark.bench, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]


def test_it_prints_every_figure_and_loses_no_label(tmp_path):
    command = [sys.executable, "benchmarks/load_test.py", "--sqlite", "--data-dir", str(tmp_path)]
    command += ["--users", "4", "--threads", "2", "--duration", "5", "--think", "0.1,0.4"]
    command += ["--trivial-duration", "2", "--conversations", "12", "--workers", "1"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for profile in ("realistic", "stress"):
        section = out.stdout.split(f"\n{profile}: ")[1]
        for kind in ("card page", "label"):  # p50, p95, p99, max of each kind that ran
            assert re.search(rf"^  {kind}\s+\d+" + r"\s+\d+ms" * 4, section, re.M), section
        assert re.search(r"throughput: [\d.]+ requests/s, [\d.]+ per core", section), section
        accepted = re.search(r"labels accepted (\d+), stored (\d+), lost 0, duplicated 0", section)
        assert accepted and int(accepted[1]) > 0 and accepted[1] == accepted[2], section
        summary = re.search(
            rf"^SUMMARY {profile}: errors 0, lost labels 0, duplicated 0, label p95 \d+ ms"
            r".*ratio to trivial (\d+\.\d)",
            out.stdout,
            re.M,
        )
        assert summary and float(summary[1]) > 0, out.stdout
