"""Import benchmark: a generated WildChat-style JSONL file imported on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/import_bench.py [--n 100000] [--backends sqlite,postgres]

For each backend it prints conversations per second and memory, and on PostgreSQL the ratio
to the floor: the same rows (conversations + turns) loaded with a bare COPY into the same
tables. Memory is the peak resident set size growth during the import (ru_maxrss delta,
not tracemalloc, which would slow the import down several times), plus the RSS sampled at
the first and last batch to show it stays flat.

Each backend runs in its own subprocess, because the settings read DATABASE_URL at import
time. PostgreSQL: the database `cardsort_bench` is created and dropped on the server of
--pg-url (default postgres://postgres@127.0.0.1:5432)."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pg import pg_admin  # benchmarks/pg.py; a script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
PG_DATABASE = "cardsort_bench"

LANGUAGES = ["English"] * 6 + ["Chinese", "Russian", "French", "Spanish"]
MODELS = ["gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613", "gpt-4-0314", "gpt-4-1106-preview"]
TOPICS = [
    "parse a CSV file",
    "sort a dict by value",
    "fix my React hook",
    "write a SQL join",
    "explain this segfault",
    "reverse a linked list",
    "debounce a function",
    "read a file line by line",
    "call a REST API",
    "set up a Django model",
]
CATEGORIES = [
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "self-harm",
    "self-harm/instructions",
    "self-harm/intent",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
]


def _code(rng: random.Random) -> str:
    lines = [
        f"def step_{i}(data):\n    result = [x * {i} for x in data if x % 2]\n"
        f"    return sorted(result)[:{rng.randint(1, 9)}]\n"
        for i in range(rng.randint(2, 12))
    ]
    return "```python\n" + "\n".join(lines) + "```"


def _moderation(rng: random.Random) -> dict:
    return {
        "categories": {c: False for c in CATEGORIES},
        "category_scores": {c: round(rng.random() / 1000, 8) for c in CATEGORIES},
        "flagged": False,
    }


def make_record(rng: random.Random, i: int, ts: int) -> dict:
    conversation = []
    for t in range(rng.randint(1, 6)):
        tid = 1_000_000 + i * 10 + t
        language = rng.choice(LANGUAGES)
        topic = rng.choice(TOPICS)
        user = f"Can you {topic}? Here is what I have:\n{_code(rng)}\nIt fails with KeyError."
        if rng.random() < 0.01:
            user = ""  # WildChat's "Empty User Inputs"
        reply = (
            f"Sure. The problem is the lookup on line {rng.randint(1, 40)}. "
            f"Try this instead:\n\n{_code(rng)}\n\nThis {topic} without the KeyError. "
            + "It also handles empty input. "
            * rng.randint(0, 6)
        )
        header = {"accept-language": "en-US,en;q=0.9", "user-agent": "Mozilla/5.0 (X11)"}
        conversation.append(
            {
                "content": user,
                "role": "user",
                "language": language if user else "Nolang",
                "redacted": False,
                "toxic": False,
                "timestamp": None,
                "turn_identifier": tid,
                "country": "United States",
                "state": "California",
                "hashed_ip": f"{i:064x}",
                "header": header,
            }
        )
        conversation.append(
            {
                "content": reply,
                "role": "assistant",
                "language": language,
                "redacted": False,
                "toxic": False,
                "timestamp": ts + t * 60_000,
                "turn_identifier": tid,
                "country": None,
                "state": None,
                "hashed_ip": None,
                "header": None,
            }
        )
    return {
        "conversation_hash": f"{rng.getrandbits(128):032x}",
        "model": rng.choice(MODELS),
        "timestamp": ts + len(conversation) * 30_000,
        "conversation": conversation,
        "turn": len(conversation) // 2,
        "language": conversation[0]["language"],
        "openai_moderation": [_moderation(rng) for _ in conversation],
        "detoxify_moderation": [{"toxicity": round(rng.random() / 100, 8)} for _ in conversation],
        "toxic": False,
        "redacted": False,
        "state": "California",
        "country": "United States",
        "hashed_ip": f"{i:064x}",
        "header": {"accept-language": "en-US,en;q=0.9", "user-agent": "Mozilla/5.0 (X11)"},
    }


def generate(path: Path, n: int) -> tuple[int, int]:
    rng = random.Random(20250101)
    turns = 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            record = make_record(rng, i, 1680300000000 + i * 1000)
            turns += record["turn"]
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return n, turns


# --- one backend, in a subprocess -------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _import(study_slug: str, path: Path, use_copy: bool | None) -> dict:
    from annotation.importers import import_files
    from annotation.importers import writer as writer_module
    from annotation.models import Study
    from taxonomy.models import Taxonomy

    writer_module.USE_COPY = use_copy
    study = Study.objects.create(
        slug=study_slug,
        name=study_slug,
        taxonomy_version=Taxonomy.load_preset("interaction-smells"),
    )
    samples: list[float] = []
    rss_before, maxrss_before = _rss_mb(), _maxrss_mb()
    started = time.perf_counter()
    report = import_files(study, [path], progress=lambda done, total: samples.append(_rss_mb()))
    seconds = time.perf_counter() - started
    return {
        "study_id": study.pk,
        "conversations": report.conversations,
        "turns": report.turns,
        "rejected": report.rejected,
        "seconds": seconds,
        "per_second": report.conversations / seconds,
        "rss_before_mb": rss_before,
        "rss_first_batch_mb": samples[0] if samples else rss_before,
        "rss_last_batch_mb": samples[-1] if samples else rss_before,
        "maxrss_delta_mb": _maxrss_mb() - maxrss_before,
    }


def _copy_floor(study_id: int) -> dict:
    """Time a bare COPY of the rows the import wrote (exported first, not timed) into the
    same tables under a second study: the fastest PostgreSQL can take them."""
    import io

    from django.db import connection, transaction

    from annotation.models import Study

    clone = Study.objects.get(pk=study_id)
    clone.pk, clone.slug = None, "copy-floor"
    clone.save()
    cols = (
        "external_id, source_format, source_file, source_line, system_prompt, preamble, "
        "metadata, n_turns, created_at"
    )
    turn_cols = '"index", user_text, reply_text, reply_parts, reply_empty, reply_missing, metadata'
    with connection.cursor() as cursor:
        raw = cursor.cursor
        cursor.execute("SELECT max(id) FROM annotation_conversation")
        offset = cursor.fetchone()[0]
        conversations, turns = io.StringIO(), io.StringIO()
        raw.copy_expert(
            f"COPY (SELECT id + {offset}, {clone.pk}, {cols} FROM annotation_conversation "
            f"WHERE study_id = {study_id}) TO STDOUT",
            conversations,
        )
        raw.copy_expert(
            f'COPY (SELECT t.conversation_id + {offset}, t."index", t.user_text, t.reply_text, '
            "t.reply_parts, t.reply_empty, t.reply_missing, t.metadata FROM annotation_turn t "
            "JOIN annotation_conversation c ON c.id = t.conversation_id "
            f"WHERE c.study_id = {study_id}) TO STDOUT",
            turns,
        )
        size = conversations.tell() + turns.tell()
        conversations.seek(0)
        turns.seek(0)
        started = time.perf_counter()
        with transaction.atomic():
            raw.copy_expert(
                f"COPY annotation_conversation (id, study_id, {cols}) FROM STDIN", conversations
            )
            raw.copy_expert(
                f"COPY annotation_turn (conversation_id, {turn_cols}) FROM STDIN",
                turns,
            )
        seconds = time.perf_counter() - started
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('annotation_conversation', 'id'), "
            "(SELECT max(id) FROM annotation_conversation))"
        )
    return {"seconds": seconds, "bytes": size}


def worker(backend: str, writer_path: str, path: Path) -> dict:
    """One import in a fresh process, so its memory figures are its own."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    use_copy = writer_path == "copy"
    # Warm up (imports, the taxonomy preset, the database's caches) so that the timed
    # import is not charged for them.
    warmup = path.with_name(f"warmup-{backend}.jsonl")
    with open(path, encoding="utf-8") as src, open(warmup, "w", encoding="utf-8") as dst:
        dst.writelines(line for _, line in zip(range(200), src, strict=False))
    _import(f"warmup-{writer_path}", warmup, use_copy=use_copy)
    result = _import(f"bench-{writer_path}", path, use_copy=use_copy)
    if use_copy:
        result["floor"] = _copy_floor(result["study_id"])
    return result


# --- driver -----------------------------------------------------------------------------------


def run_worker(backend: str, writer_path: str, path: Path, tmp: Path, pg_url: str) -> dict:
    env = dict(
        os.environ,
        CARDSORT_DATA_DIR=str(tmp / "data"),
        DEBUG="false",
        SECRET_KEY="bench",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    if backend == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{tmp / f'bench-{writer_path}.sqlite3'}"
    else:
        env["DATABASE_URL"] = f"{pg_url}/{PG_DATABASE}"
    command = [
        sys.executable,
        __file__,
        "--worker",
        f"{backend}:{writer_path}",
        "--file",
        str(path),
    ]
    out = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _line(name: str, r: dict) -> str:
    return (
        f"  {name:<22} {r['conversations']:>7} conv {r['turns']:>7} turns "
        f"{r['seconds']:7.1f} s  {r['per_second']:7.0f} conv/s  "
        f"RSS {r['rss_first_batch_mb']:.0f} MB at first batch -> "
        f"{r['rss_last_batch_mb']:.0f} MB at last; peak RSS growth (ru_maxrss delta) "
        f"{r['maxrss_delta_mb']:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="conversations to generate")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        backend, writer_path = args.worker.split(":")
        print(json.dumps(worker(backend, writer_path, Path(args.file))))
        return

    with tempfile.TemporaryDirectory(prefix="cardsort-bench-") as tmpdir:
        tmp = Path(tmpdir)
        path = tmp / "wildchat.jsonl"
        started = time.perf_counter()
        n, turns = generate(path, args.n)
        size_mb = path.stat().st_size / 1e6
        print(
            f"generated {n} WildChat-style conversations, {turns} turns, {size_mb:.0f} MB "
            f"in {time.perf_counter() - started:.0f} s"
        )
        for backend in args.backends.split(","):
            print(f"{backend}:")
            if backend == "sqlite":
                print(_line("bulk_create writer", run_worker("sqlite", "orm", path, tmp, "")))
                continue
            pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            pg_admin(args.pg_url, f"CREATE DATABASE {PG_DATABASE}")
            try:
                copy = run_worker("postgres", "copy", path, tmp, args.pg_url)
                orm = run_worker("postgres", "orm", path, tmp, args.pg_url)
            finally:
                pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            floor = copy["floor"]
            print(_line("COPY writer (default)", copy))
            print(_line("bulk_create writer", orm))
            print(
                f"  {'bare COPY floor':<22} {floor['seconds']:7.1f} s for the same rows "
                f"({floor['bytes'] / 1e6:.0f} MB of COPY text), {n / floor['seconds']:.0f} conv/s"
            )
            print(
                "  ratio to the COPY floor: "
                f"COPY writer {copy['seconds'] / floor['seconds']:.2f}x, "
                f"bulk_create writer {orm['seconds'] / floor['seconds']:.2f}x"
            )


if __name__ == "__main__":
    main()
