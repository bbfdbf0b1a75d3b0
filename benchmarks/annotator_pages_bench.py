"""The annotator's pages at two sizes (issue 25 point 1): a group of two annotators holding
`--small` (40) conversations and one holding `--n` (40,000), each conversation 3 turns,
each annotator having labelled the first third of their cards in round 1, 20% of the cards
labelled by both disputed. Prints each page's median and p95 (warm, Django's test client,
production settings) with its query count, at both sizes, and the ratio big/small: the same
time at both sizes is the aim.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cardsort_bench \\
        .venv/bin/python benchmarks/annotator_pages_bench.py --build --n 40000

--build drops and recreates the database first (PostgreSQL) and writes the two studies;
without it the pages of the studies already written are measured (e.g. after `migrate`, to
time a migration's backfill and the pages after it)."""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TURNS = 3
PAGES = (
    "next card", "card", "card htmx", "study home", "my cards", "my cards p.40", "discuss",
    "api cards", "api cards far", "api cards to do",
)  # fmt: skip


def _setup(database_url: str, build: bool) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.update(
        DATABASE_URL=database_url,
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="testserver,127.0.0.1",
        LOG_LEVEL="WARNING",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        SECURE_SSL_REDIRECT="false",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    os.environ.setdefault("CARDSORT_DATA_DIR", str(ROOT / "var" / "bench-annotator"))
    if build:
        import psycopg2

        server, name = database_url.rsplit("/", 1)
        conn = psycopg2.connect(f"{server}/postgres")
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cursor.execute(f'CREATE DATABASE "{name}"')
        conn.close()
    import django

    django.setup()
    from django.core.management import call_command

    if build:
        call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # production settings


def build_study(slug: str, n: int) -> None:
    """A study of `n` conversations of TURNS turns, all assigned to one group of two, each
    annotator's first third labelled, 20% of those labelled by both disputed."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import (
        Annotation,
        CardState,
        CardStatus,
        Conversation,
        Group,
        Membership,
        Role,
        Study,
        Turn,
    )
    from taxonomy.models import Taxonomy

    started = time.perf_counter()
    User = get_user_model()
    version = Taxonomy.load_preset("interaction-smells")
    study = Study.objects.create(slug=slug, name=slug, taxonomy_version=version)
    a = User.objects.create_user(f"{slug}a", password="x")
    b = User.objects.create_user(f"{slug}b", password="x")
    for u in (a, b):
        Membership.objects.create(study=study, user=u, role=Role.ANNOTATOR)
    group = Group.objects.create(study=study, name="g")
    group.annotators.add(a, b)
    for start in range(0, n, 5000):
        convs = Conversation.objects.bulk_create(
            Conversation(
                study=study, external_id=f"{slug}-{i}", source_format="native", n_turns=TURNS
            )
            for i in range(start, min(n, start + 5000))
        )
        Turn.objects.bulk_create(
            Turn(
                conversation=c,
                index=t,
                user_text=f"question {c.external_id} {t}",
                reply_text=f"answer {t}: ```python\nx = {t}\n```",
            )
            for c in convs
            for t in range(1, TURNS + 1)
        )
    Conversation.objects.filter(study=study).assign(group)
    turns = list(
        Turn.objects.filter(conversation__study=study)
        .order_by("conversation_id", "index")
        .values_list("pk", flat=True)
    )
    labelled = turns[: len(turns) // 3]
    for start in range(0, len(labelled), 5000):
        chunk = labelled[start : start + 5000]
        Annotation.objects.bulk_create(
            Annotation(turn_id=t, annotator=u, round=1, taxonomy_version=version)
            for t in chunk
            for u in (a, b)
        )
        CardState.objects.bulk_create(
            CardState(
                turn_id=t,
                group=group,
                status=CardStatus.DISPUTED if i % 5 == 0 else CardStatus.AGREED,
                round=2 if i % 5 == 0 else 1,
            )
            for i, t in enumerate(chunk, start=start)
        )
    try:  # the kept queue (issue 25): rows written behind the ORM's back are recounted
        from annotation.models.queue import rebuild

        rebuild(study.pk)
    except ImportError:
        pass
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"built {slug}: {n} conversations, {len(turns)} cards, "
        f"{2 * len(labelled)} labels in {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def measure(slug: str, repeat: int) -> dict[str, tuple[float, float, int]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotation.models import Study, Turn

    study = Study.objects.get(slug=slug)
    user = get_user_model().objects.get(username=f"{slug}a")
    client = Client()
    client.force_login(user)
    turns = list(
        Turn.objects.filter(conversation__study=study)
        .order_by("conversation_id", "index")
        .values_list("pk", flat=True)
    )
    mid = turns[len(turns) // 2]
    card = reverse("card", args=[slug, mid])
    pages = {
        "next card": reverse("queue", args=[slug]),
        "card": card,
        "card htmx": card,
        "study home": reverse("study", args=[slug]),
        "my cards": reverse("my_cards", args=[slug]),
        "my cards p.40": reverse("my_cards", args=[slug]) + "?page=40",
        "discuss": reverse("discuss_queue", args=[slug]),
        # the API's list of my cards (api/views.cards), 100 a page
        "api cards": f"/api/studies/{slug}/cards/",
        # page 40 (of 100 cards) or the last one: the API answers 404 past the end
        "api cards far": f"/api/studies/{slug}/cards/?page={min(40, -(-len(turns) // 100))}",
        "api cards to do": f"/api/studies/{slug}/cards/?done=false",
    }
    out = {}
    for name, url in pages.items():
        extra = {"HTTP_HX_REQUEST": "true"} if name == "card htmx" else {}
        client.get(url, **extra)  # warm
        times, queries = [], 0
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as ctx:
                started = time.perf_counter()
                response = client.get(url, **extra)
                times.append((time.perf_counter() - started) * 1000)
            assert response.status_code in (200, 302), (name, response.status_code)
            queries = len(ctx.captured_queries)
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        out[name] = (statistics.median(times), p95, queries)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40_000)
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--label", default="", help="a word printed with the figures")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/cardsort_bench")
    _setup(url, args.build)
    small, big = f"ann{args.small}", f"ann{args.n}"
    if args.build:
        build_study(small, args.small)
        build_study(big, args.n)
    a, b = measure(small, args.repeat), measure(big, args.repeat)
    print(
        f"\n{args.label} annotator pages, ms (median / p95) and queries, "
        f"{args.small} vs {args.n} conversations ({TURNS} turns each)"
    )
    print(f"{'page':16}{'small':>22}{'big':>22}{'big/small':>11}")
    for page in PAGES:
        (ma, pa, qa), (mb, pb, qb) = a[page], b[page]
        print(
            f"{page:16}{ma:9.1f} /{pa:7.1f} q{qa:<3}{mb:9.1f} /{pb:7.1f} q{qb:<3}{mb / ma:10.2f}x"
        )


if __name__ == "__main__":
    main()
