"""The judge dry run's benchmark (benchmarks/judge_dryrun_bench.py) still runs end to end: a
tiny run on SQLite builds the study, times `run_judge --dry-run` and prints every figure it
promises, the estimate one call per card. The timings themselves are not checked: speed
belongs in the benchmark's output, never in a timed assertion."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]


def test_it_prints_the_dry_runs_time_and_its_ratio_to_the_floor():
    command = [sys.executable, "benchmarks/judge_dryrun_bench.py", "--n", "12", "--runs", "1"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    cards = re.search(r"study: 12 conversations, ([\d,]+) cards in one group", out.stdout)
    assert cards, out.stdout
    assert re.search(rf"estimate: {cards[1]} calls, [\d,]+ tokens", out.stdout), out.stdout
    assert re.search(
        r"run_judge --dry-run: first [\d.]+ s \(makes and seats the judge\), then median "
        r"[\d.]+ s, slowest [\d.]+ s of 1 \(aim: under 5 s: (met|NOT met)\)",
        out.stdout,
    ), out.stdout
    assert re.search(r"floor \(a count of the group's cards\): [\d.]+ ms", out.stdout)
    assert re.search(r"ratio to the floor: [\d.]+x", out.stdout)
