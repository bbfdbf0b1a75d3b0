"""`manage.py sample` at the issue's scale: a study of --n conversations (default 81,366,
the population of the study the issue describes), drawn on PostgreSQL and on SQLite with the
same seed, stratified by source, language and turns; the conversations are inserted in
another order on each database, so their ids differ.

    .venv/bin/python benchmarks/sample_bench.py [--n 81366] [--draw 383] [--seed 7]

It prints, per database, the seconds of the draw (reading the population, drawing, setting
the rest aside, storing the Sample) and a digest of the drawn conversations' external ids;
the two digests must be equal (the run fails otherwise). The PostgreSQL database --database
(default cardsort_sample_bench) is created on --pg-url and dropped at the end; the SQLite
file lives in a temporary folder."""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pg import pg_admin

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["wildchat", "lmsys"]
LANGUAGES = ["English", "Chinese", "Russian", "Nolang", None]


def _records(n: int) -> list[dict]:
    rng = random.Random(0)
    return [
        {
            "external_id": f"{rng.getrandbits(64):016x}",
            "source_format": rng.choice(SOURCES),
            "source_file": f"part-{i // 10_000:03}.jsonl",
            "source_line": i % 10_000 + 1,
            "n_turns": min(1 + int(rng.expovariate(0.4)), 60),
            "metadata": {"language": lang} if (lang := rng.choice(LANGUAGES)) else {},
        }
        for i in range(n)
    ]


def run_one(n: int, draw: int, seed: int, order_seed: int) -> None:
    """In a child process whose environment names the database: build, draw, print."""
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.intake.sampling import draw_sample
    from annotation.models import Conversation, Study
    from taxonomy.models import Taxonomy

    call_command("migrate", verbosity=0)
    version = Taxonomy.load_preset("interaction-smells")
    study = Study.objects.create(slug="bench", name="bench", taxonomy_version=version)
    records = _records(n)
    random.Random(order_seed).shuffle(records)  # other ids on each database
    Conversation.objects.bulk_create(
        (Conversation(study=study, **r) for r in records), batch_size=5_000
    )
    started = time.perf_counter()
    sample = draw_sample(
        study, n=draw, seed=seed, stratify=["source", "language", "turns"], min_turns=2
    )
    seconds = time.perf_counter() - started
    drawn = sorted(
        Conversation.objects.filter(study=study).in_set().values_list("external_id", flat=True)
    )
    digest = hashlib.sha256("\n".join(drawn).encode()).hexdigest()[:16]
    print(f"{seconds:.2f} {digest} {len(sample.strata)} {sample.population}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=81_366)
    parser.add_argument("--draw", type=int, default=383)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument("--database", default="cardsort_sample_bench")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child is not None:
        run_one(args.n, args.draw, args.seed, args.child)
        return
    folder = tempfile.mkdtemp(prefix="sample-bench-")
    base = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
    }
    base.update(CARDSORT_DATA_DIR=folder, LOG_LEVEL="WARNING")
    databases = {
        "PostgreSQL": f"{args.pg_url}/{args.database}",
        "SQLite": f"sqlite:///{folder}/bench.sqlite3",
    }
    pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")
    pg_admin(args.pg_url, f"CREATE DATABASE {args.database}")
    digests = set()
    try:
        for order, (name, url) in enumerate(databases.items()):
            out = subprocess.run(
                [sys.executable, __file__, *sys.argv[1:], "--child", str(order)],
                env={**base, "DATABASE_URL": url},
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            seconds, digest, strata, population = out[-4:]
            digests.add(digest)
            print(
                f"{name:10} draw {args.draw:,} of {int(population):,} (min 2 turns, "
                f"{strata} strata): {float(seconds):.2f} s, drawn ids {digest}"
            )
    finally:
        pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")
    if len(digests) != 1:
        sys.exit("the databases drew different conversations")
    print("same conversations drawn on both databases")


if __name__ == "__main__":
    main()
