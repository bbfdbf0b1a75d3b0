"""`run_judge --dry-run` on the 10,000-conversation benchmark study (issue 22): the study of
the card keys benchmark (card_keys_study.py: generated coding conversations of 3-8 turns,
imported with the real importer), all its conversations assigned to one group, and the
time of `manage.py run_judge bench10k --judge llm-annotate --dry-run` (check the request,
seat the judge, read every card's text lengths, estimate calls and tokens, save the planned
run), against a floor: a bare count of the group's cards. The aim: under 5 s.

    .venv/bin/python benchmarks/judge_dryrun_bench.py [--n 10000] [--runs 3] [--pg]

SQLite in a temporary folder by default; --pg on PostgreSQL (--pg-url, the database
--database dropped and created, and dropped at the end). Prints the study's size, the
estimate, the median and slowest of --runs dry runs, the floor and their ratio."""

from __future__ import annotations

import argparse
import io
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM_SECONDS = 5.0


def build(folder: Path, n: int):
    from card_keys_study import PRESET, write_conversations  # same folder

    from annotation.importers import import_files
    from annotation.models import Conversation, Group, Kind, Study
    from taxonomy.models import Taxonomy

    study = Study.objects.create(
        slug="bench10k", name="Bench", taxonomy_version=Taxonomy.load_preset(PRESET)
    )
    path = folder / "conversations.jsonl"
    write_conversations(path, n)
    report = import_files(study, [path], fmt="native")
    assert not report.errors, report.errors[:3]
    group = Group.objects.create(study=study, name="all", kind=Kind.STUDENT)
    Conversation.objects.filter(study=study).assign(group)
    return study, group, report


def timed(fn, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pg", action="store_true", help="on PostgreSQL instead of SQLite")
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument("--database", default="cardsort_judge_bench")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    if args.pg:
        from pg import pg_admin  # same folder

        pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")
        pg_admin(args.pg_url, f"CREATE DATABASE {args.database}")
        os.environ["DATABASE_URL"] = f"{args.pg_url}/{args.database}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.update(SECRET_KEY=secrets.token_urlsafe(50), LOG_LEVEL="WARNING")
    os.environ["CARDSORT_DATA_DIR"] = str(folder)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import JudgeRun, Turn

    try:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        study, group, report = build(folder, args.n)
        print(
            f"study: {report.conversations:,} conversations, {report.turns:,} cards in one "
            f"group, built in {time.perf_counter() - started:.1f} s "
            f"({'PostgreSQL' if args.pg else 'SQLite'})"
        )
        command = ["run_judge", study.slug, "--judge", "llm-annotate", "--group", group.name]
        command += ["--model", "bench-model", "--dry-run"]
        out = io.StringIO()
        first, *again = timed(lambda: call_command(*command, stdout=out), args.runs + 1)
        median, worst = statistics.median(again), max(again)
        floor = statistics.median(
            timed(lambda: Turn.objects.filter(conversation__assignments__group=group).count(), 3)
        )
        estimate = JudgeRun.objects.get().counts["estimate"]
        print(
            f"estimate: {estimate['calls']:,} calls, {estimate['tokens']:,} tokens "
            f"({estimate['prompt_tokens']:,} prompt, {estimate['completion_tokens']:,} completion)"
        )
        met = "met" if max(first, worst) < AIM_SECONDS else "NOT met"
        print(
            f"run_judge --dry-run: first {first:.3f} s (makes and seats the judge), then median "
            f"{median:.3f} s, slowest {worst:.3f} s of {args.runs} (aim: under "
            f"{AIM_SECONDS:g} s: {met})"
        )
        print(f"floor (a count of the group's cards): {floor * 1000:.1f} ms")
        print(f"ratio to the floor: {median / floor:.1f}x")
    finally:
        connection.close()
        if args.pg:
            from pg import pg_admin

            pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")


if __name__ == "__main__":
    main()
