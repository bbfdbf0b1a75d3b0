"""The episode pages benchmark (benchmarks/episode_pages_bench.py) still runs end to end: a
tiny run on SQLite builds the episode study and opens each page as the annotator, the
moderator and the lead, every one answering (the moderator's "next" redirects). The timings
are the benchmark's output, not checked here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["next episode (queue/, to it)", "an episode", "sessions", "a session",
         "episodes to decide", "an episode (decide)", "API, episodes", "methods text"]  # fmt: skip


def test_it_builds_the_episode_study_and_opens_each_page(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["CARDSORT_DATA_DIR"] = str(tmp_path)
    command = [sys.executable, "benchmarks/episode_pages_bench.py", "--sqlite", "--episodes",
               "200", "--runs", "1"]  # fmt: skip
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "built 200 episodes in 20 sessions" in out.stdout
    for page in PAGES:
        line = re.search(rf"  \w+ +{re.escape(page)} +[\d.]+ms .*\n", out.stdout)
        assert line and "HTTP" not in line.group(0), (page, out.stdout)
    assert re.search(r"moderator +next escalated .*\(HTTP 302\)", out.stdout)
