"""Backup benchmark: dump_study and load_study on a generated study, time and peak memory.

    .venv/bin/python benchmarks/backup_bench.py [--conversations 10000] [--turns 5]
        [--database-url URL]

Makes a fresh instance (a SQLite file in a temporary folder, or --database-url, which it
migrates and fills: give it an empty database), generates a study of CONVERSATIONS x TURNS
cards in one group of two annotators who label every card (1-2 types each), then runs
`dump_study` and `load_study --as copy` (into the same database: every id changes) as
their own processes, and prints their summary lines (seconds, peak memory of the process)
and the file's size."""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(n_conversations: int, n_turns: int) -> None:
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, Assignment, Conversation, Group, Study, Turn
    from taxonomy.models import Taxonomy

    rng = random.Random(0)
    version = Taxonomy.load_preset("interaction-smells")
    types = list(version.axes.first().types.all())
    study = Study.objects.create(slug="bench", name="Bench", taxonomy_version=version)
    users = [get_user_model().objects.create(username=n) for n in ("a1", "a2")]
    group = Group.objects.create(study=study, name="G")
    group.annotators.set(users)
    Through = Annotation.types.through
    for start in range(0, n_conversations, 1000):
        chunk = Conversation.objects.bulk_create(
            Conversation(study=study, external_id=f"c{i}", source_format="native", n_turns=n_turns)
            for i in range(start, min(start + 1000, n_conversations))
        )
        Assignment.objects.bulk_create(Assignment(conversation=c, group=group) for c in chunk)
        turns = Turn.objects.bulk_create(
            Turn(conversation=c, index=i, user_text="please " * 20, reply_text="ok " * 40)
            for c in chunk
            for i in range(1, n_turns + 1)
        )
        labels = Annotation.objects.bulk_create(
            Annotation(turn=t, annotator=u, taxonomy_version=version) for t in turns for u in users
        )
        Through.objects.bulk_create(
            Through(annotation_id=a.pk, type_id=t.pk)
            for a in labels
            for t in rng.sample(types, rng.randint(1, 2))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="backup-bench-"))
    os.environ["CARDSORT_DATA_DIR"] = str(folder)
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{folder / 'db.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("MEDIA_ROOT", None)
    sys.path.insert(0, str(ROOT))
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], check=True)
    import django

    django.setup()
    started = time.monotonic()
    generate(args.conversations, args.turns)
    print(f"generated {args.conversations} conversations in {time.monotonic() - started:.1f} s")
    path = folder / "bench.jsonl.gz"
    for command in (["dump_study", "bench", str(path)], ["load_study", str(path), "--as", "copy"]):
        done = subprocess.run([*manage, *command], check=True, capture_output=True, text=True)
        print(done.stdout.strip())
    print(f"file: {path.stat().st_size / 1e6:.1f} MB ({folder})")


if __name__ == "__main__":
    main()
