"""The conversation browser's text search (issue 25, point 3): the browser's page searching
a text, before (every turn scanned) and after (the index: pg_trgm GIN on PostgreSQL, FTS5
trigram on SQLite; annotation/db/textsearch.py), on a study of --n WildChat-style
conversations of 1 to 5 turns with prose and code.

    .venv/bin/python benchmarks/search_bench.py [--n 100000] [--backend postgres|sqlite]
        [--runs 9] [--keep] [--reuse]

The study is imported through the importer (import_files), so the index is kept while it
writes: its time is printed. The text: sentences of words drawn (Zipf-like) from the words
of this repository's docs/, code blocks, "edge case" in one turn in 200 and a rare word in
one in 10,000. Per search it prints the matches and the page's median and p95 of --runs
requests (after a warm-up), in milliseconds, with the time spent in the database, then
before/after and the ratio of "after" to the floor: the same page with no text asked
(the first 50 conversations and their count).

"Before" is the scan the search did without an index: on PostgreSQL the two trigram
indexes are dropped (then built again, timed: what the migration costs on a study that
has its turns already); on SQLite the search is told no text is long enough for the index
(textsearch.MIN_INDEXED), so it checks `icontains` on every turn (then the FTS5 index is
rebuilt from the turns, timed).

PostgreSQL: the database --database (default cardsort_search_bench) is dropped and created
on the server of --pg-url (default postgres://postgres@127.0.0.1:5432), and dropped at the
end unless --keep. SQLite: a file in a temporary folder (--sqlite-path to keep one)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from browse_bench import QueryClock  # same folder
from import_bench import LANGUAGES, MODELS, _code
from pg import pg_admin

ROOT = Path(__file__).resolve().parent.parent
PHRASE = "edge case"  # in one turn in 200
RARE = "flibbertigibbet"  # in one turn in 10,000


def vocabulary() -> tuple[list[str], list[float]]:
    """The words of docs/ (letters only), the most frequent first, with Zipf weights."""
    counts: dict[str, int] = {}
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for word in re.findall(r"[A-Za-z][a-z]+", path.read_text(encoding="utf-8")):
            counts[word] = counts.get(word, 0) + 1
    words = sorted(counts, key=lambda w: (-counts[w], w))
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    return words, weights


class Writer:
    """Sentences of Zipf-drawn words, code blocks, and the planted phrase and rare word."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.words, self.cum = vocabulary()

    def prose(self, low: int, high: int) -> str:
        rng = self.rng
        words = rng.choices(self.words, cum_weights=self.cum, k=rng.randint(low, high))
        if rng.random() < 1 / 200:
            words.insert(rng.randrange(len(words) + 1), rng.choice([PHRASE, "Edge case"]))
        if rng.random() < 1 / 10_000:
            words.insert(rng.randrange(len(words) + 1), RARE)
        sentences, i = [], 0
        while i < len(words):
            n = rng.randint(6, 18)
            sentence = " ".join(words[i : i + n])
            sentences.append(sentence[:1].upper() + sentence[1:] + rng.choice(".?.."))
            i += n
        return " ".join(sentences)

    def turn(self) -> tuple[str, str]:
        rng = self.rng
        user = self.prose(8, 60)
        if rng.random() < 0.3:
            user += "\n\n" + _code(rng)
        reply = self.prose(30, 160)
        if rng.random() < 0.5:
            reply += "\n\n" + _code(rng) + "\n\n" + self.prose(5, 30)
        return user, reply


def make_record(writer: Writer) -> dict:
    rng = writer.rng
    language = rng.choice(LANGUAGES)
    conversation = []
    for _ in range(rng.randint(1, 5)):
        user, reply = writer.turn()
        conversation.append({"content": user, "role": "user", "language": language})
        conversation.append({"content": reply, "role": "assistant", "language": language})
    return {
        "conversation_hash": f"{rng.getrandbits(128):032x}",
        "model": rng.choice(MODELS),
        "conversation": conversation,
        "turn": len(conversation) // 2,
        "language": language,
        "toxic": False,
        "redacted": False,
    }


def build(n: int):
    from annotation.importers import import_files
    from annotation.models import Kind, Role, Study
    from taxonomy.models import Taxonomy
    from tests.factories import make_user

    study = Study.objects.create(
        slug="search", name="search", taxonomy_version=Taxonomy.load_preset("interaction-smells")
    )
    writer = Writer(random.Random(25))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wildchat.jsonl"
        started = time.perf_counter()
        with open(path, "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(json.dumps(make_record(writer), ensure_ascii=False) + "\n")
        size = path.stat().st_size
        print(
            f"generated {n} conversations ({size / 1e6:.0f} MB, {len(writer.words)} words) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        started = time.perf_counter()
        report = import_files(study, [path], fmt="wildchat")
        assert report.conversations == n, report.errors[:3]
        print(
            f"imported {report.conversations} conversations, {report.turns} turns "
            f"(the index kept meanwhile) in {time.perf_counter() - started:.1f} s"
        )
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    return study, lead


def reuse():
    from django.contrib.auth import get_user_model

    from annotation.models import Study

    return Study.objects.get(slug="search"), get_user_model().objects.get(username="lead")


def searches() -> list[tuple[str, str]]:
    return [
        ("the phrase (1 turn in 200)", PHRASE),
        ("a rare word (1 in 10,000)", RARE),
        ("a common word", "should"),
        ("no match", "zebra crossing"),
        ("code", "sorted(result)[:7]"),
        ("2 characters (no trigram)", "zq"),
    ]


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20, method="inclusive")[18]


def timed(study, lead, params: dict, runs: int) -> tuple[float, float, float, str]:
    """(median ms, p95 ms, median ms in the database, the result count as the page says)."""
    from django.db import connection
    from django.test import RequestFactory

    from annotation.views.browse import browse

    request = RequestFactory().get("/", params)
    request.user = lead
    browse(request, study.slug)  # warm-up
    times, in_db = [], []
    for _ in range(runs):
        clock = QueryClock()
        started = time.perf_counter()
        with connection.execute_wrapper(clock):
            response = browse(request, study.slug)
        times.append((time.perf_counter() - started) * 1000)
        in_db.append(clock.seconds * 1000)
        assert response.status_code == 200, response.status_code
    count = response.content.decode().split('id="result-count">', 1)[1].split(" ", 1)[0]
    return statistics.median(times), p95(times), statistics.median(in_db), count


def run(study, lead, runs: int, label: str) -> dict[str, tuple]:
    print(f"{label}:")
    out = {}
    for name, text in searches():
        median, worst, db, count = timed(study, lead, {"q": text}, runs)
        out[name] = (median, worst, db, count)
        print(
            f"  {name:<28} {count:>6} conv {median:7.0f} ms median, p95 {worst:6.0f} "
            f"({db:5.0f} in the database)"
        )
    return out


def drop_index(vendor: str):
    """Make the search scan; returns the function that brings the index back."""
    from django.db import connection

    from annotation.db import textsearch

    if vendor == "postgresql":
        with connection.cursor() as cursor:
            for name in textsearch.PG_INDEXES:
                cursor.execute(f'DROP INDEX "{name}"')

        def back():
            textsearch.install(connection)
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE annotation_turn")

        return back
    textsearch.MIN_INDEXED = 10**9

    def back():
        textsearch.MIN_INDEXED = 3
        with connection.cursor() as cursor:
            cursor.execute(textsearch.REBUILD_FTS)

    return back


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="the study a --keep run left")
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument("--database", default="cardsort_search_bench")
    parser.add_argument("--sqlite-path", help="the SQLite file (default: a temporary one)")
    args = parser.parse_args()

    if args.backend == "postgres":
        if not args.reuse:
            pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")
            pg_admin(args.pg_url, f"CREATE DATABASE {args.database}")
        os.environ["DATABASE_URL"] = f"{args.pg_url}/{args.database}"
    else:
        path = Path(args.sqlite_path or tempfile.mkdtemp(prefix="search-bench-")) / "s.sqlite3"
        if args.sqlite_path:
            path = Path(args.sqlite_path)
        if not args.reuse and path.exists():
            path.unlink()
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.update(SECRET_KEY=secrets.token_urlsafe(50), LOG_LEVEL="WARNING")
    os.environ.setdefault("CARDSORT_DATA_DIR", tempfile.mkdtemp(prefix="search-bench-"))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Turn

    try:
        call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: the manifest
        if args.reuse:
            study, lead = reuse()
        else:
            call_command("migrate", verbosity=0)
            study, lead = build(args.n)
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
        turns = Turn.objects.filter(conversation__study=study).count()
        print(
            f"the browser's text search on {connection.vendor}, {args.n} conversations, "
            f"{turns} turns, {args.runs} runs:"
        )
        floor = timed(study, lead, {}, args.runs)
        print(f"  floor: the page with no text asked {floor[0]:7.0f} ms median, p95 {floor[1]:.0f}")
        after = run(study, lead, args.runs, "after (the index)")
        back = drop_index(connection.vendor)
        before = run(study, lead, args.runs, "before (every turn scanned)")
        started = time.perf_counter()
        back()
        print(f"the index built again from the turns in {time.perf_counter() - started:.1f} s")
        print("before -> after (median), and after / floor:")
        for name, _ in searches():
            b, a = before[name], after[name]
            assert b[3] == a[3], f"{name}: {b[3]} conversations scanning, {a[3]} with the index"
            print(
                f"  {name:<28} {b[0]:7.0f} -> {a[0]:6.0f} ms ({b[0] / a[0]:5.1f}x faster), "
                f"{a[0] / floor[0]:4.1f}x the floor"
            )
    finally:
        connection.close()
        if args.backend == "postgres" and not args.keep:
            pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")


if __name__ == "__main__":
    main()
