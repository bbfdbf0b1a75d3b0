"""Episode import benchmark: N episodes (default 100,000) of an extractor, two evidence
quotes each (one in a user message, one in a tool result), over N/4 agent sessions of six
turns, imported with `import_episodes` on PostgreSQL (DATABASE_URL; SQLite too with
--sqlite).

    DATABASE_URL=postgres://... .venv/bin/python benchmarks/episodes_bench.py [--n 100000]

It prints the import's time and rate and the database floor: the time PostgreSQL itself
takes to store the rows the import wrote (the episodes and their quotes COPYed back in one
transaction, same indexes and foreign keys), and the ratio import / floor (the aim: at most
3). Each backend runs in its own subprocess (the settings read DATABASE_URL at import time);
the database `cardsort_episodes_bench` is created and dropped on the server of DATABASE_URL."""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pg import pg_admin  # benchmarks/pg.py; a script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
PG_DATABASE = "cardsort_episodes_bench"
TURNS = 6


def generate(folder: Path, n: int) -> tuple[Path, Path]:
    """N/4 native agent sessions of six turns (a tool call and its result in each reply),
    and N episodes over them, four a session, a session's episodes on consecutive lines (an
    extractor reads a whole session and writes its episodes)."""
    rng = random.Random(20260101)
    sessions = (n + 3) // 4
    conversations, episodes = folder / "sessions.jsonl", folder / "episodes.jsonl"
    with conversations.open("w") as c:
        for i in range(sessions):
            messages = []
            for t in range(1, TURNS + 1):
                messages += [
                    {"role": "user", "content": f"session {i} turn {t}: fix the failing test, "
                     "and do not   touch the public API"},
                    {"role": "assistant", "content": f"I changed `api.py` in step {t}.",
                     "tool_calls": [{"id": f"c{t}", "type": "function", "function": {
                         "name": "bash", "arguments": json.dumps({"command": "pytest -q"})}}]},
                    {"role": "tool", "tool_call_id": f"c{t}", "content": f"{t} failed, 3 passed"},
                ]  # fmt: skip
            c.write(json.dumps({"id": f"s{i}", "messages": messages}) + "\n")
    with episodes.open("w") as e:
        for k in range(n):
            first = rng.randint(1, TURNS)
            last = min(TURNS, first + rng.randint(0, 2))
            record = {
                "conversation": f"s{k // 4}", "first_turn": first, "last_turn": last,
                "goal": "keep the public API unchanged", "confidence": round(rng.random(), 3),
                "evidence": [
                    {"turn": first, "part": "user", "quote": "do not touch the public API"},
                    {"turn": last, "part": "tool_result", "quote": f"{last} failed"},
                ],
                "labels": {"symptom": ["developer_constraint_violation"]},
            }  # fmt: skip
            e.write(json.dumps(record) + "\n")
    return conversations, episodes


def worker(conversations: Path, episodes: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.importers import import_files
    from annotation.importers.episodes import import_episodes
    from annotation.models import EvidenceQuote, Study
    from taxonomy.models import Taxonomy

    call_command("migrate", verbosity=0)
    study = Study.objects.create(
        slug="bench", name="bench", taxonomy_version=Taxonomy.load_preset("agent-misalignment")
    )
    started = time.perf_counter()
    imported = import_files(study, [conversations], fmt="native")
    conversation_seconds = time.perf_counter() - started
    started = time.perf_counter()
    report = import_episodes(study, episodes, "bench")
    episode_seconds = time.perf_counter() - started
    floor = database_floor() if django.db.connection.vendor == "postgresql" else None
    return {
        "conversations": imported.conversations,
        "conversation_seconds": conversation_seconds,
        "counts": report.counts,
        "quotes": EvidenceQuote.objects.count(),
        "episode_seconds": episode_seconds,
        "floor_seconds": floor,
        "messages": report.messages[:3],
    }


def database_floor() -> float:
    """PostgreSQL's own work to store the rows the episode import wrote: the run, episodes
    and quotes copied out, the tables emptied, and the rows COPYed back in one transaction
    with the same indexes and foreign keys. What no importer of these rows can go below."""
    import io

    from django.db import connection, transaction

    from annotation.models import Episode, EvidenceQuote, ExtractionRun

    tables = [m._meta.db_table for m in (ExtractionRun, Episode, EvidenceQuote)]
    dumps = {}
    with connection.cursor() as cursor:
        for table in tables:
            dumps[table] = io.BytesIO()
            cursor.cursor.copy_expert(f'COPY "{table}" TO STDOUT', dumps[table])
        # CASCADE: the judgement tables (empty here) refer to the episodes
        cursor.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")
        cursor.execute("VACUUM ANALYZE")
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        for table in tables:
            dumps[table].seek(0)
            cursor.cursor.copy_expert(f'COPY "{table}" FROM STDIN', dumps[table])
    return time.perf_counter() - started


def run_worker(database_url: str, files: tuple[Path, Path], tmp: Path) -> dict:
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        CARDSORT_DATA_DIR=str(tmp / "data"),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        LOG_LEVEL="WARNING",
    )
    command = [sys.executable, __file__, "--worker", *map(str, files)]
    out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"the worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _print(backend: str, r: dict) -> None:
    seconds, counts = r["episode_seconds"], r["counts"]
    print(f"{backend}:")
    print(f"  sessions  {r['conversations']:>7}  {r['conversation_seconds']:7.1f} s")
    print(
        f"  episodes  {counts['imported']:>7} ({r['quotes']} quotes, {counts['rejected']} "
        f"rejected, {counts['quotes_missing']} quotes not found)  {seconds:7.1f} s  "
        f"{counts['imported'] / seconds:7.0f} /s"
    )
    for message in r["messages"]:
        print(f"  {message}")
    if r.get("floor_seconds"):
        floor = r["floor_seconds"]
        print(
            f"  database floor (COPY of the rows the import wrote, foreign-key checks "
            f"included): {floor:.2f} s; episode import / floor: {seconds / floor:.2f} "
            "(aim: at most 3)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="episodes")
    parser.add_argument("--sqlite", action="store_true", help="run on SQLite too")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(Path(args.worker[0]), Path(args.worker[1]))))
        return
    database_url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory(prefix="cardsort-episodes-bench-") as tmpdir:
        tmp = Path(tmpdir)
        files = generate(tmp, args.n)
        print(f"generated {(args.n + 3) // 4} sessions of {TURNS} turns and {args.n} episodes")
        if args.sqlite:
            _print("sqlite", run_worker(f"sqlite:///{tmp / 'bench.sqlite3'}", files, tmp))
        if database_url.startswith("postgres"):
            parts = urlsplit(database_url)
            server = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
            pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            pg_admin(server, f"CREATE DATABASE {PG_DATABASE}")
            try:
                _print("postgres", run_worker(f"{server}/{PG_DATABASE}", files, tmp))
            finally:
                pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
        else:
            print("postgres: skipped (set DATABASE_URL=postgres://... to run it)")


if __name__ == "__main__":
    main()
