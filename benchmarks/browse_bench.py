"""The lead's conversation browser on PostgreSQL: a study of 10,000 WildChat-style
conversations of 5 turns each, and the time of the browser's page (the view, its queries and
its template) for each kind of search, then of one conversation's page.

    .venv/bin/python benchmarks/browse_bench.py [--n 10000] [--turns 5] [--runs 7]

It prints, per search, the matches and the median and slowest of --runs requests (after one
warm-up), in milliseconds. The text searches read the trigram indexes of migration 0027
(pg_trgm, GIN on UPPER(user_text) and UPPER(reply_text): what Django's icontains compares);
benchmarks/search_bench.py times them with and without the index.

The database --database (default cardsort_browse) is dropped and created on the server of
--pg-url (default postgres://postgres@127.0.0.1:5432), and dropped at the end unless --keep."""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from import_bench import LANGUAGES, MODELS, TOPICS, _code, _moderation  # same folder
from pg import pg_admin

ROOT = Path(__file__).resolve().parent.parent
RARE = "flibbertigibbet"  # a word in one turn in a thousand: a search that finds few


def make_record(rng: random.Random, i: int, n_turns: int) -> dict:
    language = rng.choice(LANGUAGES)
    conversation = []
    for _ in range(n_turns):
        topic = rng.choice(TOPICS)
        user = f"Can you {topic}? Here is what I have:\n{_code(rng)}\nIt fails with KeyError."
        if rng.random() < 0.001:
            user += f" My cat is called {RARE}."
        reply = f"Sure. The problem is the lookup on line {rng.randint(1, 40)}.\n\n{_code(rng)}"
        conversation.append({"content": user, "role": "user", "language": language})
        conversation.append({"content": reply, "role": "assistant", "language": language})
    return {
        "conversation_hash": f"{rng.getrandbits(128):032x}",
        "model": rng.choice(MODELS),
        "conversation": conversation,
        "turn": n_turns,
        "language": language,
        "openai_moderation": [_moderation(rng) for _ in conversation],
        "toxic": False,
        "redacted": False,
        "country": "United States",
    }


def build(n: int, n_turns: int):
    """The study: import, two groups sharing a fifth of it, card states on half the cards."""
    from annotation.importers import import_files
    from annotation.models import CardState, CardStatus, Conversation, Group, Kind, Role, Study
    from taxonomy.models import Taxonomy
    from tests.factories import make_user

    study = Study.objects.create(
        slug="browse", name="browse", taxonomy_version=Taxonomy.load_preset("interaction-smells")
    )
    rng = random.Random(9)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wildchat.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for i in range(n):
                f.write(json.dumps(make_record(rng, i, n_turns), ensure_ascii=False) + "\n")
        started = time.perf_counter()
        report = import_files(study, [path], fmt="wildchat")
        assert report.conversations == n, report.errors[:3]
        print(
            f"imported {report.conversations} conversations, {report.turns} turns "
            f"in {time.perf_counter() - started:.1f} s"
        )
    groups = []
    for g in range(2):
        group = Group.objects.create(study=study, name=f"G{g + 1}", kind=Kind.STUDENT)
        for a in range(2):
            user = make_user(f"a{g}{a}")
            study.add_member(user, Role.ANNOTATOR)
            group.annotators.add(user)
        groups.append(group)
    ids = list(Conversation.objects.filter(study=study).order_by("id").values_list("id", flat=True))
    Conversation.objects.filter(pk__in=ids[: n * 6 // 10]).assign(groups[0])
    Conversation.objects.filter(pk__in=ids[n * 4 // 10 :]).assign(groups[1])
    states = []
    weights = [("agreed", 40), ("disputed", 6), ("escalated", 2), ("open", 2), (None, 50)]
    for group in groups:
        turns = group.conversations.values_list("turns__id", flat=True)
        for turn_id in turns:
            (status,) = rng.choices([s for s, _ in weights], [w for _, w in weights])
            if status is not None:
                round_ = 1 if status in (CardStatus.OPEN, CardStatus.AGREED) else 2
                states.append(CardState(turn_id=turn_id, group=group, status=status, round=round_))
    CardState.objects.bulk_create(states, batch_size=5000)
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    return study, lead, groups


class QueryClock:
    """The time spent in the database during a request (a connection execute wrapper)."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started


def reuse():
    from django.contrib.auth import get_user_model

    from annotation.models import Study

    study = Study.objects.get(slug="browse")
    lead = get_user_model().objects.get(username="lead")
    return study, lead, list(study.groups.order_by("name"))


def timed(view, request, *args, runs: int) -> tuple[float, float, float, object]:
    """(median ms, slowest ms, median ms in the database, the last response)."""
    from django.db import connection

    view(request, *args)  # warm-up
    times, in_db = [], []
    for _ in range(runs):
        clock = QueryClock()
        started = time.perf_counter()
        with connection.execute_wrapper(clock):
            response = view(request, *args)
        times.append((time.perf_counter() - started) * 1000)
        in_db.append(clock.seconds * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(times), max(times), statistics.median(in_db), response


def searches(groups) -> list[tuple[str, dict]]:
    g1, g2 = groups
    return [
        ("no filter", {}),
        ("text: rare word", {"q": RARE}),
        ("text: common phrase", {"q": "KeyError"}),
        ("text: no match", {"q": "zebra crossing"}),
        ("text: external id prefix", {"q": "00ff"}),
        ("model", {"model": MODELS[2]}),
        ("language", {"language": "chinese"}),
        ("group", {"group": str(g2.pk)}),
        ("unassigned", {"group": "none"}),
        ("state open", {"state": "open"}),
        ("state escalated in G1", {"state": "escalated", "group": str(g1.pk)}),
        ("turns 5..5", {"min_turns": "5", "max_turns": "5"}),
        ("model+language+state", {"model": MODELS[0], "language": "english", "state": "open"}),
        ("text+state+group", {"q": "KeyError", "state": "disputed", "group": str(g1.pk)}),
        ("no filter, page 100", {"page": "100"}),
    ]


def run(study, lead, groups, runs: int) -> None:
    from django.test import RequestFactory

    from annotation.browse import Choices
    from annotation.models import Conversation
    from annotation.views.browse import browse, conversation

    factory = RequestFactory()
    t = []
    for _ in range(runs):
        started = time.perf_counter()
        Choices.of(study)
        t.append((time.perf_counter() - started) * 1000)
    print(f"  {'the form choices alone':<28} {'':>11} {statistics.median(t):6.0f} ms")
    for name, params in searches(groups):
        request = factory.get("/", params)
        request.user = lead
        median, worst, db, response = timed(browse, request, study.slug, runs=runs)
        count = response.content.decode().split('id="result-count">', 1)[1].split(" ", 1)[0]
        print(f"  {name:<28} {count:>6} conv " + _figures(median, db, worst))
    shared = Conversation.objects.filter(study=study, assignments__group=groups[1])
    target = shared.filter(assignments__group=groups[0]).first()
    request = factory.get("/")
    request.user = lead
    median, worst, db, _ = timed(conversation, request, study.slug, target.pk, runs=runs)
    print(f"  {'one conversation page':<28} {'':>11} " + _figures(median, db, worst))


def _figures(median: float, db: float, worst: float) -> str:
    return f"{median:6.0f} ms ({db:4.0f} in the database), slowest {worst:4.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--pg-url", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    )
    parser.add_argument("--database", default="cardsort_browse")
    parser.add_argument("--reuse", action="store_true", help="the study a --keep run left")
    args = parser.parse_args()

    if not args.reuse:
        pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")
        pg_admin(args.pg_url, f"CREATE DATABASE {args.database}")
    os.environ["DATABASE_URL"] = f"{args.pg_url}/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.update(SECRET_KEY=secrets.token_urlsafe(50), LOG_LEVEL="WARNING")
    os.environ.setdefault("CARDSORT_DATA_DIR", tempfile.mkdtemp(prefix="browse-bench-"))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    try:
        if args.reuse:
            study, lead, groups = reuse()
        else:
            call_command("migrate", verbosity=0)
            study, lead, groups = build(args.n, args.turns)
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        print(f"the browser's page on PostgreSQL, {args.n} conversations x {args.turns} turns:")
        run(study, lead, groups, args.runs)
    finally:
        connection.close()
        if not args.keep:
            pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {args.database}")


if __name__ == "__main__":
    main()
