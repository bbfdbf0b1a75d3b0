"""The card keys benchmark (benchmarks/card_keys_bench.py) still runs end to end: a tiny run
on SQLite builds both studies, drives Chromium over a real server, runs out of cards on the
small study (its labels are reset and the run goes on), and prints every figure it
promises. The figures themselves are not checked: speed belongs in the benchmark's output,
never in a timed assertion."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# a benchmark in Chromium: `bench` and `browser`; its subprocess may take 600 s on a loaded machine
pytestmark = [pytest.mark.browser, pytest.mark.bench, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
N = 12


def test_it_prints_the_keypress_figures_and_the_server_profile(tmp_path):
    command = [sys.executable, "benchmarks/card_keys_bench.py", "--backends", "sqlite"]
    command += ["--n", str(N), "--warmup", "1", "--profile", "2", "--data-dir", str(tmp_path)]
    # two conversations a group: the big study's annotator runs out of open cards too
    command += ["--conversations", "4", "--groups", "2"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    # study, keys, p50, p95, max, n, p95 painted, p50 request, p95/150
    row = r"^  (demo|10k) \(.*?\)\s+(n|type \+ Enter)" + r"\s+(\d+)ms" * 3 + r"\s+(\d+)"
    row += r"\s+(\d+)ms" * 2 + r"\s+(\d+\.\d\d)"
    rows = re.findall(row, out.stdout, re.M)
    assert sorted(r[:2] for r in rows) == [
        ("10k", "n"),
        ("10k", "type + Enter"),
        ("demo", "n"),
        ("demo", "type + Enter"),
    ], out.stdout
    assert {int(r[5]) for r in rows} == {N}, out.stdout  # N cards timed, warm-up apart
    assert "aim: p95 < 150 ms" in out.stdout
    # the big study's annotator had 5 or so cards to label: the run went on over them
    assert re.search(r"^  bench10k: the queue ran out \d+ times", out.stdout, re.M), out.stdout
    for request in ("GET htmx", "GET page", "POST"):
        assert re.search(rf"^  {request}\s+2\s", out.stdout, re.M), out.stdout
