"""Import benchmark: a generated WildChat-style JSONL file imported on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/import_bench.py [--n 100000] [--backends sqlite,postgres]
        [--writers copy,orm] [--without-fingerprints]
    nice .venv/bin/python benchmarks/import_bench.py --conversations 1000000 \
        --backends postgres --writers copy --without-fingerprints   # the issue-10 run
    .venv/bin/python benchmarks/import_bench.py --n 100000 --backends postgres \
        --writers copy --without-thread   # issue 10 point 5: what the writer thread gains

For each backend it prints conversations per second and memory, and on PostgreSQL the ratio
to the floor: the same rows (conversations + turns, fingerprints and job included) loaded
with a bare COPY into the same tables. The import runs as an import job does (a Job, its
conversations carrying it, the fingerprint check on). `--without-fingerprints` runs the
COPY writer a second time with the fingerprint check off, to show what it costs;
`--without-thread` runs it again without its writer thread (annotation/db/options.py:
WriterOptions, passed to import_files).

Memory: the peak resident set size growth during the import (ru_maxrss delta, not
tracemalloc, which would slow the import down several times), and the RSS sampled at every
batch: printed at 10%, 50% and 100% of the file, and its peak, to show it stays flat.

Each run is its own subprocess, because the settings read DATABASE_URL at import time.
PostgreSQL: the database `cardsort_bench` (or $BENCH_PG_DATABASE) is created before and
dropped after each run on the server of --pg-url (default postgres://postgres@127.0.0.1:5432),
so a 1,000,000 run needs disk for one import and its floor at a time (about 2 x 10 GB),
plus the file (13 GB).

Measured (issue 10, 2 shared cores, PostgreSQL 15 on the same machine): 1,000,000
conversations (3.5M turns, 12.9 GB) with the fingerprint check 1367 s against its floor's
324 s (4.2x; other engineers' test runs loaded the machine in its first half), without it
522 s against 212 s (2.5x, a quieter machine); RSS flat at 107-122 MB (10/50/100%) in both.
At 100,000 on a quiet machine, one after the other: 56.6 s with the check, 51.7 s without,
floor 19.5 s: 2.9x and 2.75x. The check costs about 10%; the rest of the gap to COPY was
the Python side (JSON parsing, the turn rule, building the COPY text).

Issue 10 point 5 (the aim: at most 2x the floor), measured with the fingerprint check on:
- orjson for the JSON lines and for the COPY text's JSON (importers/fastjson.py,
  writer._json; the stdlib wherever orjson would differ or refuses), the fingerprint hashed
  in one call (same value): the Python side of 5,000 records (read, parse, turn rule,
  fingerprint, COPY text; cProfile harness without the database) from 3.4 s to 1.0 s;
  20,000 conversations 3.06x -> 2.12x (8.7 s against 4.1 s).
- the writer thread (PostgreSQL: batch N is sent on its own connection while batch N+1 is
  read; the reading thread builds the COPY text): 100,000 conversations (350,411 turns,
  1.3 GB), one after the other on a lightly loaded machine: 36.5 s against the floor's
  20.4 s, 1.79x; without the thread 47.2 s against 19.9 s, 2.37x. RSS 123 / 124 / 125 MB
  at 10 / 50 / 100% (peak sampled 135 MB; 104-107 MB without the thread, which holds one
  more batch). At 20,000: 6.6 s against 3.8 s, 1.74x (without the thread 2.16x).
At 1,000,000 (the same code, a quiet machine, autovacuum off as on this machine): 760.1 s
against the floor's 244.3 s, 3.11x; RSS 125 / 153 / 156 MB at 10 / 50 / 100% (peak sampled
158 MB). The per-batch lookups were planned on a table never analysed (reltuples -1): on
the study_id index, so each read every row of the study (EXPLAIN at 1M rows: 1.09 s for
the fingerprints, 0.92 s for the ids, a batch; after ANALYZE 13 ms and 10 ms, on their own
indexes). The writer now runs ANALYZE before its first lookup and at every doubling
(tests/importers/test_lookup_plans.py): 1,000,000 in 710.7 s on a quiet machine (1,407
conv/s, RSS 127 / 155 / 127 MB), 2.91x the last quiet floor (this run's floor, 705 s, was
taken while four test suites ran beside it and is not a floor). py-spy on that run: the
Python process at 100% of a core (orjson's parse 18%, COPY escaping 10%, the WildChat turn
rule and timestamps 14%, the depth and NUL checks 9%, fingerprints 3%) and PostgreSQL at
about 67% of the other: the reading side is the limit. 2x would take about 2,050 conv/s,
so the Python side would have to drop by a third, with PostgreSQL's ~244 s of work on the
same two cores: not found. Not explained either: the 100,000 run above read 2,740 conv/s
with the same code, twice this rate, on the same kind of machine in an earlier session; a
100,000 and a 1,000,000 run on one quiet machine, one after the other, would tell whether
the rate falls with the table or the machines differ.
What is left at 100,000: the database's own work (the COPY into the batch's transactions, commit per
batch) is about the floor itself and now overlaps the reading; the reading thread waits
for the writer thread about a quarter of the time. The ratio depends on a free second core:
with others' jobs on the machine the thread gains less."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pg import pg_admin  # benchmarks/pg.py; a script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
# BENCH_PG_DATABASE: another name, so that two benchmarks on one server do not drop each
# other's database
PG_DATABASE = os.environ.get("BENCH_PG_DATABASE", "cardsort_bench")

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


def _import(
    study_slug: str, path: Path, use_copy: bool | None, fingerprints: bool, thread: bool = True
) -> dict:
    from annotation.db.options import WriterOptions
    from annotation.importers import import_files
    from annotation.models import Job, JobKind, Study
    from taxonomy.models import Taxonomy

    options = WriterOptions.for_connection(
        copy=use_copy,
        thread=None if thread else False,
        check_fingerprints=fingerprints,
    )
    study = Study.objects.create(
        slug=study_slug,
        name=study_slug,
        taxonomy_version=Taxonomy.load_preset("interaction-smells"),
    )
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, params={"format": "auto"})
    job.start()
    samples: list[tuple[float, float]] = []  # (fraction of the file read, RSS MB)

    def progress(done: int, total: int) -> None:
        samples.append((done / total if total else 1.0, _rss_mb()))

    rss_before, maxrss_before = _rss_mb(), _maxrss_mb()
    started = time.perf_counter()
    report = import_files(study, [path], progress=progress, job=job, writer_options=options)
    seconds = time.perf_counter() - started

    def rss_at(fraction: float) -> float:
        return next((rss for done, rss in samples if done >= fraction), rss_before)

    return {
        "study_id": study.pk,
        "conversations": report.conversations,
        "turns": report.turns,
        "rejected": report.rejected,
        "seconds": seconds,
        "per_second": report.conversations / seconds,
        "rss_before_mb": rss_before,
        "rss_first_batch_mb": samples[0][1] if samples else rss_before,
        "rss_last_batch_mb": samples[-1][1] if samples else rss_before,
        "rss_10_mb": rss_at(0.1),
        "rss_50_mb": rss_at(0.5),
        "rss_100_mb": rss_at(1.0),
        "rss_peak_mb": max((rss for _, rss in samples), default=rss_before),
        "maxrss_mb": _maxrss_mb(),
        "maxrss_delta_mb": _maxrss_mb() - maxrss_before,
    }


def _copy_floor(study_id: int) -> dict:
    """Time a bare COPY of the rows the import wrote (exported first to temporary files, not
    timed: at a million conversations the text is several GB) into the same tables under a
    second study: the fastest PostgreSQL can take them."""

    from django.db import connection, transaction

    from annotation.models import Study

    clone = Study.objects.get(pk=study_id)
    clone.pk, clone.slug = None, "copy-floor"
    clone.save()
    cols = (
        "external_id, key, source_format, source_file, source_line, system_prompt, preamble, "
        "metadata, n_turns, created_at, fingerprint, import_job_id"
    )
    turn_cols = '"index", user_text, reply_text, reply_parts, reply_empty, reply_missing, metadata'
    with connection.cursor() as cursor:
        raw = cursor.cursor
        cursor.execute("SELECT max(id) FROM annotation_conversation")
        offset = cursor.fetchone()[0]
        conversations = tempfile.TemporaryFile("w+", encoding="utf-8", dir=os.environ["BENCH_TMP"])
        turns = tempfile.TemporaryFile("w+", encoding="utf-8", dir=os.environ["BENCH_TMP"])
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
        conversations.close()
        turns.close()
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('annotation_conversation', 'id'), "
            "(SELECT max(id) FROM annotation_conversation))"
        )
    return {"seconds": seconds, "bytes": size}


def worker(
    backend: str, writer_path: str, path: Path, fingerprints: bool = True, thread: bool = True
) -> dict:
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
    _import(f"warmup-{writer_path}", warmup, use_copy, fingerprints, thread)
    result = _import(f"bench-{writer_path}", path, use_copy, fingerprints, thread)
    if use_copy:
        result["floor"] = _copy_floor(result["study_id"])
    return result


# --- driver -----------------------------------------------------------------------------------


def run_worker(
    backend: str,
    writer_path: str,
    path: Path,
    tmp: Path,
    pg_url: str,
    fingerprints: bool = True,
    thread: bool = True,
) -> dict:
    env = dict(
        os.environ,
        BENCH_TMP=str(tmp),
        CARDSORT_DATA_DIR=str(tmp / "data"),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    if backend == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{tmp / f'bench-{writer_path}.sqlite3'}"
    else:
        env["DATABASE_URL"] = f"{pg_url}/{PG_DATABASE}"
        pg_admin(pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
        pg_admin(pg_url, f"CREATE DATABASE {PG_DATABASE}")
    command = [
        sys.executable,
        __file__,
        "--worker",
        f"{backend}:{writer_path}",
        "--file",
        str(path),
    ]
    if not fingerprints:
        command.append("--no-fingerprints")
    if not thread:
        command.append("--no-thread")
    try:
        out = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    finally:
        if backend != "sqlite":
            pg_admin(pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _line(name: str, r: dict) -> str:
    return (
        f"  {name:<22} {r['conversations']:>7} conv {r['turns']:>7} turns "
        f"{r['seconds']:7.1f} s  {r['per_second']:7.0f} conv/s  "
        f"RSS {r['rss_10_mb']:.0f} MB at 10%, {r['rss_50_mb']:.0f} MB at 50%, "
        f"{r['rss_100_mb']:.0f} MB at 100%, peak sampled {r['rss_peak_mb']:.0f} MB; "
        f"peak RSS growth (ru_maxrss delta) {r['maxrss_delta_mb']:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n", "--conversations", type=int, default=100_000, help="conversations to generate"
    )
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--writers", default="copy,orm", help="on PostgreSQL: copy (the default), orm, or both"
    )
    parser.add_argument(
        "--without-fingerprints",
        action="store_true",
        help="also run the COPY writer with the fingerprint check off, to measure its cost",
    )
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument(
        "--without-thread",
        action="store_true",
        help="also run the COPY writer without its writer thread, to measure what it gains",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--no-thread", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--no-fingerprints", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        backend, writer_path = args.worker.split(":")
        fingerprints = not args.no_fingerprints
        thread = not args.no_thread
        print(json.dumps(worker(backend, writer_path, Path(args.file), fingerprints, thread)))
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
            writers = args.writers.split(",")
            runs = {}
            if "copy" in writers:
                runs["COPY writer (default)"] = run_worker(
                    "postgres", "copy", path, tmp, args.pg_url
                )
                _print_done(runs)
                if args.without_fingerprints:
                    runs["COPY, no fingerprints"] = run_worker(
                        "postgres", "copy", path, tmp, args.pg_url, fingerprints=False
                    )
                    _print_done(runs)
                if args.without_thread:
                    runs["COPY, no writer thread"] = run_worker(
                        "postgres", "copy", path, tmp, args.pg_url, thread=False
                    )
                    _print_done(runs)
            if "orm" in writers:
                runs["bulk_create writer"] = run_worker("postgres", "orm", path, tmp, args.pg_url)
                _print_done(runs)
            floors = [r["floor"] for r in runs.values() if "floor" in r]
            if floors:
                floor = floors[0]
                print(
                    f"  {'bare COPY floor':<22} {floor['seconds']:7.1f} s for the same rows "
                    f"({floor['bytes'] / 1e6:.0f} MB of COPY text), "
                    f"{n / floor['seconds']:.0f} conv/s"
                )
                ratios = ", ".join(
                    f"{name} {r['seconds'] / r.get('floor', floor)['seconds']:.2f}x"
                    for name, r in runs.items()
                )
                print(f"  ratio to the bare COPY of the same rows: {ratios}")
                for name, r in runs.items():
                    if "floor" in r and r is not floors[0]:
                        print(f"  ({name}: its own floor {r['floor']['seconds']:.1f} s)")


def _print_done(runs: dict) -> None:
    name, result = list(runs.items())[-1]
    print(_line(name, result), flush=True)


if __name__ == "__main__":
    main()
