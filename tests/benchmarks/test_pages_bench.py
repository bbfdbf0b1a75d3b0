"""The pages benchmark (benchmarks/pages_bench.py, issue 25) still runs end to end: a tiny
run on SQLite builds the study, opens every page of its table and prints each one's median,
p95, queries and ratio to the health check. The timings themselves are not checked: speed
belongs in the benchmark's output, never in a timed assertion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    "next card (queue/, to the card)",
    "home (my studies)",
    "a card",
    "study home",
    "my cards",
    "discussion queue",
    "a card's discussion",
    "study page",
    "jobs (panel, htmx)",
    "report",
    "time per card",
    "browser, no filter",
    "browser, disputed cards",
    'browser, search "edge case"',
    'browser, "edge case", page 10',
    'browser, search "fly before dawn"',
    'browser, "edge case", count all',
    "moderation queue",
    "conversations",
]


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["CARDSORT_DATA_DIR"] = str(tmp_path)
    command = [sys.executable, "benchmarks/pages_bench.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_it_refuses_sqlite_unless_asked(tmp_path):
    out = run(tmp_path, "--n", "10")
    assert out.returncode != 0
    assert "--sqlite" in out.stderr


def test_it_prints_every_page_with_its_queries_and_ratio_to_the_floor(tmp_path):
    out = run(tmp_path, "--sqlite", "--n", "200", "--runs", "2")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert re.search(r"built 200 conversations, \d+ turns and 160 labels in [\d.]+ s", out.stdout)
    assert "agreement job done" in out.stdout
    for page in PAGES:
        line = re.search(
            rf"  \w+ +{re.escape(page)} +[\d.]+ms +[\d.]+ms +\d+ +[\d.]+ms +[\d.]+\n", out.stdout
        )
        assert line, (page, out.stdout)
    # a second run keeps the study (--reuse) and measures again
    again = run(tmp_path, "--sqlite", "--n", "200", "--runs", "1", "--reuse")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "reusing the study built before" in again.stdout
