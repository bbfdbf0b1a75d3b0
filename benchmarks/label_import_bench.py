"""Label import benchmark: N conversations of one turn each (N cards), then 2N labels (two
annotators a card, a third of the cards disputed) imported with `import_annotations
--create-members`, on SQLite and, when DATABASE_URL names a PostgreSQL server, on it.

    .venv/bin/python benchmarks/label_import_bench.py [--n 20000] [--batch-size 2000]

For each backend it prints both imports' times and rates and the ratio label import /
conversation import (the aim: at most 2 on PostgreSQL for 40,000 labels of 20,000 cards).
On PostgreSQL it also prints the database floor: the time PostgreSQL itself takes to store
the rows the label import wrote (COPY, same indexes and foreign keys), and both ratios to it.
Each backend runs in its own subprocess, because the settings read DATABASE_URL at import
time. PostgreSQL: the database `cardsort_label_bench` is created and dropped on the server
of DATABASE_URL."""

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
PG_DATABASE = "cardsort_label_bench"
CODES = ["ambiguous_instruction", "incomplete_instruction", "code_rollback", "must_do_omission"]


def generate(folder: Path, n: int) -> tuple[Path, Path]:
    """N native conversations of one turn, and two annotators' labels on each card."""
    rng = random.Random(20250101)
    conversations, labels = folder / "conversations.jsonl", folder / "labels.jsonl"
    with conversations.open("w") as c, labels.open("w") as lab:
        for i in range(n):
            messages = [
                {"role": "user", "content": f"conversation {i}: write a parser for CSV"},
                {"role": "assistant", "content": f"```python\ndef parse_{i}(s):\n    ...\n```"},
            ]
            c.write(json.dumps({"id": f"b{i}", "messages": messages}) + "\n")
            first = rng.sample(CODES, rng.randint(0, 2))
            second = first if rng.random() < 2 / 3 else rng.sample(CODES, rng.randint(0, 2))
            for annotator, codes in (("alice", first), ("bob", second)):
                record = {"conversation": f"b{i}", "turn": 1, "annotator": annotator}
                record |= {"labels": codes, "round": 1, "group": "bench"}
                lab.write(json.dumps(record) + "\n")
    return conversations, labels


# --- one backend, in a subprocess -------------------------------------------------------------


def worker(conversations: Path, labels: Path, batch_size: int) -> dict:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.importers import import_files
    from annotation.importers.annotations import import_annotations
    from annotation.models import CardState, Study
    from taxonomy.models import Taxonomy

    call_command("migrate", verbosity=0)
    study = Study.objects.create(
        slug="bench", name="bench", taxonomy_version=Taxonomy.load_preset("interaction-smells")
    )
    started = time.perf_counter()
    imported = import_files(study, [conversations], fmt="native")
    conversation_seconds = time.perf_counter() - started
    started = time.perf_counter()
    report = import_annotations(study, labels, create_members=True, batch_size=batch_size)
    label_seconds = time.perf_counter() - started
    states = dict(CardState.objects.values_list("status").annotate(n=django.db.models.Count("pk")))
    floor = database_floor() if django.db.connection.vendor == "postgresql" else None
    return {
        "floor_seconds": floor,
        "conversations": imported.conversations,
        "conversation_seconds": conversation_seconds,
        "labels": report.imported,
        "rejected": len(report.rejected),
        "label_seconds": label_seconds,
        "states": states,
    }


def database_floor() -> float:
    """PostgreSQL's own work to store the rows the label import wrote: the same rows copied
    out, the tables emptied, and the rows COPYed back in one transaction, with the same
    indexes and foreign keys (whose checks at commit are most of it). No Python, no reads,
    no rules: what no importer of these rows can go below."""
    import io

    from django.db import connection, transaction

    from annotation.models import Annotation, Assignment, CardState, Consensus

    models = [Assignment, CardState, Annotation, Annotation.types.through, Consensus]
    models.append(Consensus.types.through)
    tables = [m._meta.db_table for m in models]
    dumps = {}
    with connection.cursor() as cursor:
        for table in tables:
            dumps[table] = io.BytesIO()
            cursor.cursor.copy_expert(f'COPY "{table}" TO STDOUT', dumps[table])
        cursor.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))
        cursor.execute("VACUUM ANALYZE")
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        for table in tables:
            dumps[table].seek(0)
            cursor.cursor.copy_expert(f'COPY "{table}" FROM STDIN', dumps[table])
    return time.perf_counter() - started


# --- driver -----------------------------------------------------------------------------------


def run_worker(database_url: str, files: tuple[Path, Path], tmp: Path, batch_size: int) -> dict:
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        CARDSORT_DATA_DIR=str(tmp / "data"),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        LOG_LEVEL="WARNING",
    )
    command = [sys.executable, __file__, "--worker", *map(str, files), "--batch-size"]
    command.append(str(batch_size))
    out = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _print(backend: str, r: dict) -> None:
    c, lab = r["conversation_seconds"], r["label_seconds"]
    print(f"{backend}:")
    print(
        f"  conversations  {r['conversations']:>7}        {c:7.1f} s  "
        f"{r['conversations'] / c:7.0f} /s"
    )
    print(
        f"  labels         {r['labels']:>7} ({r['rejected']} rejected) {lab:7.1f} s  "
        f"{r['labels'] / lab:7.0f} /s   card states {r['states']}"
    )
    print(f"  ratio label import / conversation import: {lab / c:.2f}")
    if r.get("floor_seconds"):
        floor = r["floor_seconds"]
        print(
            f"  database floor (COPY of the rows the label import wrote, foreign-key checks "
            f"included): {floor:.1f} s = {floor / c:.2f} x the conversation import; "
            f"label import / floor: {lab / floor:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="conversations (= cards)")
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = worker(Path(args.worker[0]), Path(args.worker[1]), args.batch_size)
        print(json.dumps(result))
        return

    database_url = os.environ.get("DATABASE_URL", "")
    with tempfile.TemporaryDirectory(prefix="cardsort-label-bench-") as tmpdir:
        tmp = Path(tmpdir)
        files = generate(tmp, args.n)
        print(f"generated {args.n} conversations of one turn and {2 * args.n} labels")
        sqlite = f"sqlite:///{tmp / 'bench.sqlite3'}"
        _print("sqlite", run_worker(sqlite, files, tmp, args.batch_size))
        if database_url.startswith("postgres"):
            parts = urlsplit(database_url)
            server = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
            pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            pg_admin(server, f"CREATE DATABASE {PG_DATABASE}")
            try:
                result = run_worker(f"{server}/{PG_DATABASE}", files, tmp, args.batch_size)
            finally:
                pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            _print("postgres", result)
        else:
            print("postgres: skipped (set DATABASE_URL=postgres://... to run it)")


if __name__ == "__main__":
    main()
