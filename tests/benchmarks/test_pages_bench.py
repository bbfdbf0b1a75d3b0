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

import pytest

pytestmark = pytest.mark.bench  # a script of benchmarks/ run tiny: `make test`, not test-fast

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
    "methods text",
    "API, annotations",
]


def run(tmp_path: Path, *args: str, script: str = "pages_bench.py") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["CARDSORT_DATA_DIR"] = str(tmp_path)
    command = [sys.executable, f"benchmarks/{script}", *args]
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
    assert re.search(r"count all's floor: .* [\d.]+ ms; the page [\d.]+ x that", out.stdout)
    # a second run keeps the study (--reuse) and measures again
    again = run(tmp_path, "--sqlite", "--n", "200", "--runs", "1", "--reuse")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "reusing the study built before" in again.stdout


def test_the_crawl_opens_every_route_as_each_role_and_none_fails(tmp_path):
    """benchmarks/pages_crawl.py on a tiny study (built as pages_bench.py builds it): every
    route of the URL map under the study, as the annotator, the moderator and the lead, timed
    with its queries; none answers a server error."""
    out = run(tmp_path, "--sqlite", "--n", "60", "--runs", "1", script="pages_crawl.py")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = re.findall(r"  (\w+) +([\w-]+) +[\d.]+ms +\d+ +[\d.]+ (\d{3})  (\S+)\n", out.stdout)
    assert {role for role, *_ in rows} == {"annotator", "moderator", "lead"}
    timed = {(role, name) for role, name, status, _ in rows if status == "200"}
    for wanted in ("card", "report_methods", "lead_groups", "api-annotations", "lead_browse"):
        assert ("lead", wanted) in timed or ("annotator", wanted) in timed, wanted
    assert not [r for r in rows if r[2].startswith("5")], rows
    assert "not timed (nothing in the study to fill them): api-episode" in out.stdout
