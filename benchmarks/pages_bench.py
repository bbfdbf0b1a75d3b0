"""Every page on a big study (issue 25): the annotator's and the lead's pages on a
WildChat-shaped study of --n conversations, through Django's test client with production-like
settings (DEBUG off), warm: per page the median and p95 of --runs requests, the queries it
makes, and the ratio of its median to a trivial page's (the health check, /healthz: one
`SELECT 1`), the floor of any request through the same middleware.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cardsort_pages \\
        .venv/bin/python benchmarks/pages_bench.py [--n 100000] [--runs 20] [--reuse]

The study, built fast with the project's bulk writers (COPY on PostgreSQL; annotation/db/):
--n conversations of about 3 turns (2 to 4), one group of two annotators holding 40% of
them, each conversation's first card labelled in round 1 by both (80% agreed, 16% disputed,
4% escalated to the moderator), their active times on it, a moderator, a lead, one agreement
job run (the report page's result) and one "Time per card" job (the time page's kept tables;
run on a study reused from before it had one). The browser's text search is timed on a
common text and a rare one: "edge case" is in about one turn in seven (a follow-up asks
"What about the edge case where ...", and a user message in 200 gets "the edge case of an
empty input"): 40,945 of 299,881 turns at 100,000 conversations, the hard case for an index;
RARE, a request with that addition, is in 2 turns there (seed 25); MIDDLING, "fly before
dawn", in 3,300 (one in 90). The common text's results are counted up to 1,000 (the page
says "more than 1,000"); its tenth page, and the same search with every match counted
(`count=all`, asked for by the lead), are timed too.
The database named by DATABASE_URL is dropped and made again (PostgreSQL; SQLite only with
--sqlite, in var/bench-pages/), unless --reuse finds a study of the same --n built there
before. Expect a build of about a minute per 100,000 conversations on this machine."""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SLUG = "pages"
SHARE = 0.4  # of the conversations, assigned to the group
DISPUTED, ESCALATED = 0.16, 0.04  # of the labelled cards; the rest agreed
EDGE = 200  # one user message in EDGE gets "the edge case of an empty input" added
# in 2 turns at --n 100000 (a first turn's "we need to cook the inflation asap." with that
# addition): the browser's search for a rare text
RARE = "we need to cook the inflation asap. Please also think"
# in about one turn in 90 (a translation of a fox, an owl... that wanted to fly before dawn):
# common enough that the whole search reads thousands of matches, too rare for a short walk
MIDDLING = "fly before dawn"
CHUNK = 20_000  # conversations written a batch at a time
PASSWORD = "bench-" + "password"

USER_ASKS = [
    "Write a short story about a {animal} who learns to {verb}.",
    "Can you explain how {topic} works, in simple words? I'm a student.",
    "Translate this into French: 'The {animal} wanted to {verb} before dawn.'",
    "What is the difference between {topic} and {other}? Give an example.",
    "Rewrite my paragraph to sound more formal: we need to {verb} the {topic} asap.",
    "Give me 5 ideas for a birthday party for someone who loves {topic}.",
]
FOLLOW_UPS = [
    "Make it shorter, please.",
    "Can you add more detail about the {topic} part?",
    "That's not what I meant. I wanted it about {other}.",
    "Thanks! Now write it as a poem.",
    "What about the edge case where the {animal} cannot {verb}?",
]
WORDS = {
    "animal": ["fox", "owl", "cat", "whale", "robot", "dragon"],
    "verb": ["fly", "sing", "count", "cook", "code", "forgive"],
    "topic": ["photosynthesis", "inflation", "neural networks", "the stock market", "gravity"],
    "other": ["respiration", "deflation", "decision trees", "bonds", "magnetism"],
}
REPLY = (
    "Sure! Here is {what}.\n\n{body}\n\nI hope this helps. Let me know if you would like me "
    "to change the tone, the length or anything else about the {topic}."
)
BODY = (
    "Once upon a time, a {animal} lived near the river. Every morning it tried to {verb}, "
    "and every morning it failed, until an old {other} teacher showed it that {topic} is "
    "mostly patience. "
)


# --- the settings: production-like, read from the environment at import --------------------


def set_environment(args) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="false",
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
        LOG_LEVEL="WARNING",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
        SECURE_SSL_REDIRECT="false",
        CELERY_TASK_ALWAYS_EAGER="true",
    )
    os.environ.setdefault("CARDSORT_DATA_DIR", str(ROOT / "var" / "bench-pages"))
    Path(os.environ["CARDSORT_DATA_DIR"]).mkdir(parents=True, exist_ok=True)


def start(args) -> str:
    """The settings and the database (`database`), then Django set up, migrated and its
    static files collected (the manifest DEBUG off reads): the database's vendor. Every page
    benchmark starts so."""
    set_environment(args)
    vendor = database(args)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    return vendor


def built_before(slug: str, description: str, script: str):
    """The study `slug` an earlier run built (its description says how), None when there is
    none; `script` exits when the database holds one built otherwise."""
    from annotation.models import Study

    study = Study.objects.filter(slug=slug).first()
    if study is not None and study.description != description:
        sys.exit(f"{script}: the database holds a study built otherwise ({study.description})")
    return study


def database(args) -> str:
    """'postgresql' or 'sqlite'; a fresh database unless --reuse (then it is kept)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        if not args.sqlite:
            sys.exit(
                "pages_bench: DATABASE_URL names no PostgreSQL database; the figures are "
                "PostgreSQL's (--sqlite to run on the embedded SQLite anyway)"
            )
        os.environ.pop("DATABASE_URL", None)
        path = Path(os.environ["CARDSORT_DATA_DIR"]) / "cardsort.sqlite3"
        if not args.reuse and path.exists():
            path.unlink()
        return "sqlite"
    from pg import pg_admin, pg_database_exists  # benchmarks/pg.py

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    server = urlunsplit(parts._replace(path=""))
    if not args.reuse:
        pg_admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if not args.reuse or not pg_database_exists(server, name):
        pg_admin(server, f'CREATE DATABASE "{name}"')  # --reuse with nothing to reuse: built
    return "postgresql"


# --- the study -------------------------------------------------------------------------------


def _text(rng: random.Random, template: str) -> str:
    return template.format(**{k: rng.choice(v) for k, v in WORDS.items()})


def _turn(rng: random.Random, index: int) -> tuple[str, str]:
    user = _text(rng, rng.choice(USER_ASKS if index == 1 else FOLLOW_UPS))
    if rng.randrange(EDGE) == 0 and "edge case" not in user:
        user += " Please also think about the edge case of an empty input."
    body = "".join(_text(rng, BODY) for _ in range(rng.randint(1, 6)))
    reply = _text(rng, REPLY.replace("{body}", body).replace("{what}", "a first draft"))
    return user, reply


def _rows(table: str, columns: list[str], rows: list[tuple]) -> None:
    """Rows into a table: COPY on PostgreSQL (annotation/db/sql.py), executemany on SQLite."""
    from django.db import connection

    from annotation.db.sql import copy_lines, copy_text

    if not rows:
        return
    if connection.vendor == "postgresql":

        def cell(v):
            if v is None:
                return r"\N"
            if isinstance(v, bool):
                return "t" if v else "f"
            return copy_text(v) if isinstance(v, str) else str(v)

        lines = ("\t".join(cell(v) for v in row) + "\n" for row in rows)
        copy_lines(table, ", ".join(f'"{c}"' for c in columns), lines)
        return
    marks = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        names = ", ".join(f'"{c}"' for c in columns)
        cursor.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows)


def _ids(table: str, n: int) -> list[int]:
    from django.db import connection

    from annotation.db.sql import next_ids, query_rows

    if connection.vendor == "postgresql":
        return next_ids(table, n)
    start = query_rows(f'SELECT COALESCE(MAX(id), 0) FROM "{table}"', [])[0][0] + 1
    return list(range(start, start + n))


def build(n: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation.db.inserts import insert_assignments
    from annotation.db.labels import insert_imported_annotations, insert_new_card_states
    from annotation.models import (
        CardStatus,
        CardTime,
        Conversation,
        Group,
        Job,
        JobKind,
        Kind,
        Role,
        Seat,
        Study,
        Turn,
    )
    from annotation.tasks import run_agreement
    from taxonomy.models import Taxonomy

    started = time.perf_counter()
    User = get_user_model()
    study = Study.objects.create(
        slug=SLUG,
        name=f"Pages, {n} conversations",
        description=f"pages_bench n={n}",
        taxonomy_version=Taxonomy.load_preset("interaction-smells"),
    )
    version_id = study.taxonomy_version_id
    type_ids = [t.pk for t in study.taxonomy_version.type_list()]
    group = Group.objects.create(study=study, name="Group 1", kind=Kind.STUDENT)
    annotators = []
    for name in ("ann1", "ann2"):
        user = User.objects.create_user(name, password=PASSWORD)
        study.add_member(user, Role.ANNOTATOR, Kind.STUDENT)
        group.seat(user, Seat.ANNOTATOR)
        annotators.append(user)
    moderator = User.objects.create_user("moderator", password=PASSWORD)
    study.add_member(moderator, Role.ANNOTATOR, Kind.EXPERT)
    group.moderator = moderator
    group.save(update_fields=["moderator"])
    lead = User.objects.create_user("lead", password=PASSWORD)
    study.add_member(lead, Role.LEAD, Kind.EXPERT)

    rng = random.Random(25)
    now = datetime.now(UTC)
    stamp = now.isoformat()
    conv_table, turn_table = Conversation._meta.db_table, Turn._meta.db_table
    conv_columns = [
        "id", "study_id", "external_id", "key", "source_format", "source_file", "source_line",
        "system_prompt", "preamble", "metadata", "n_turns", "created_at", "set_aside",
        "fingerprint",
    ]  # fmt: skip
    turn_columns = [
        "id", "conversation_id", "index", "user_text", "reply_text", "reply_parts",
        "reply_empty", "reply_missing", "metadata",
    ]  # fmt: skip
    counts = {"conversations": 0, "turns": 0, "labels": 0}
    for first in range(0, n, CHUNK):
        size = min(CHUNK, n - first)
        with transaction.atomic():
            conv_ids = _ids(conv_table, size)
            convs, turns, n_turns = [], [], []
            for i, conv_id in enumerate(conv_ids, first):
                k = rng.choice((2, 3, 3, 3, 4))
                n_turns.append(k)
                external = f"{rng.getrandbits(128):032x}"
                meta = '{"model": "gpt-3.5-turbo", "language": "English", "country": "US"}'
                convs.append(
                    (conv_id, study.pk, external, external, "wildchat", "wildchat.jsonl",
                     i + 1, "", "[]", meta, k, stamp, "", "")
                )  # fmt: skip
            turn_ids = iter(_ids(turn_table, sum(n_turns)))
            first_turns = []
            for conv_id, k in zip(conv_ids, n_turns, strict=True):
                for index in range(1, k + 1):
                    user, reply = _turn(rng, index)
                    turn_id = next(turn_ids)
                    if index == 1:
                        first_turns.append(turn_id)
                    turns.append((turn_id, conv_id, index, user, reply, "[]", False, False, "{}"))
            _rows(conv_table, conv_columns, convs)
            _rows(turn_table, turn_columns, turns)
            counts["conversations"] += len(convs)
            counts["turns"] += len(turns)
            # the group's share, spread over the study: every conversation whose rank falls
            # in the first SHARE of each ten
            assigned = [
                (c, t) for j, (c, t) in enumerate(zip(conv_ids, first_turns, strict=True))
                if (first + j) % 10 < SHARE * 10
            ]  # fmt: skip
            insert_assignments([(c, group.pk, now) for c, _ in assigned])
            labels, states, times = [], [], []
            for _, turn_id in assigned:
                roll = rng.random()
                a = rng.sample(type_ids, rng.choice((1, 1, 2)))
                if roll < 1 - DISPUTED - ESCALATED:
                    b, status, round_ = a, CardStatus.AGREED, 1
                else:
                    b = [t for t in type_ids if t not in a][:1]
                    escalated = roll >= 1 - ESCALATED
                    status = CardStatus.ESCALATED if escalated else CardStatus.DISPUTED
                    round_ = 2
                for user, types in zip(annotators, (a, b), strict=True):
                    labels.append((turn_id, user.pk, 1, "", "", None, True, types))
                    times.append((turn_id, user.pk, rng.randint(4_000, 90_000), stamp))
                states.append((turn_id, group.pk, status, round_))
            insert_imported_annotations(labels, version_id, now)
            assert insert_new_card_states(states, now)
            _rows(CardTime._meta.db_table, ["turn_id", "annotator_id", "active_ms", "updated_at"],
                  times)  # fmt: skip
            counts["labels"] += len(labels)
        print(f"  {first + size:>9} conversations written, {time.perf_counter() - started:.0f} s",
              file=sys.stderr)  # fmt: skip
    counts["build_s"] = time.perf_counter() - started
    if connection.vendor == "postgresql":
        # what autovacuum does soon after a bulk write (it may be off on this machine's server)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    job = Job.objects.create(
        study=study, kind=JobKind.AGREEMENT, created_by=lead,
        params={"round": 1, "seed": 0, "n_boot": 200},
    )  # fmt: skip
    agreement_started = time.perf_counter()
    run_agreement(job.pk)
    job.refresh_from_db()
    counts["agreement_job"] = job.status
    counts["agreement_s"] = time.perf_counter() - agreement_started
    return counts


def kept_times() -> None:
    """The time page's kept tables: a `times` job run, unless the study has a done one."""
    from annotation.models import Job, JobKind, JobStatus, Study
    from annotation.tasks import run_times

    study = Study.objects.get(slug=SLUG)
    times = Job.objects.filter(study=study, kind=JobKind.TIMES, status=JobStatus.DONE)
    if times.exists():
        return
    lead = study.memberships.filter(role="lead").first().user
    job = Job.objects.create(study=study, kind=JobKind.TIMES, created_by=lead)
    started = time.perf_counter()
    run_times(job.pk)
    job.refresh_from_db()
    print(f"time per card job {job.status} in {time.perf_counter() - started:.1f} s")


# --- the pages -------------------------------------------------------------------------------


class Counter:
    """connection.execute_wrapper counting the queries of a request (and timing each, for
    --slowest)."""

    def __init__(self) -> None:
        self.n = 0
        self.timed: list[tuple[float, str]] = []

    def __call__(self, execute, sql, params, many, context):
        self.n += 1
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.timed.append(((time.perf_counter() - started) * 1000, sql))


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def pages() -> list[tuple[str, str, str, dict]]:
    """(who, page, url, headers) of every page the issue's table lists."""
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from annotation.models import CardState, CardStatus, Study, Turn

    study = Study.objects.get(slug=SLUG)
    ann = get_user_model().objects.get(username="ann1")
    todo = Turn.objects.for_annotator(study, ann).todo(ann).values_list("pk", flat=True).first()
    disputed = (
        CardState.objects.filter(group__study=study, status=CardStatus.DISPUTED)
        .order_by("turn_id")
        .values_list("turn_id", flat=True)
        .first()
    )
    s = [SLUG]
    htmx = {"HTTP_HX_REQUEST": "true"}
    follow = {"follow": True}  # the redirect to the card too, as a browser does
    return [
        ("anyone", "health check (the floor)", reverse("healthz"), {}),
        ("annotator", "next card (queue/, to the card)", reverse("queue", args=s), follow),
        ("annotator", "a card", reverse("card", args=[SLUG, todo]), {}),
        ("annotator", "home (my studies)", reverse("home"), {}),
        ("annotator", "study home", reverse("study", args=s), {}),
        ("annotator", "my cards", reverse("my_cards", args=s), {}),
        ("annotator", "discussion queue", reverse("discuss_queue", args=s), {}),
        ("annotator", "a card's discussion", reverse("discussion", args=[SLUG, disputed]), {}),
        ("lead", "home (my studies)", reverse("home"), {}),
        ("lead", "study page", reverse("study", args=s), {}),
        ("lead", "jobs (panel, htmx)", reverse("job_list", args=s), htmx),
        ("lead", "report", reverse("report", args=s), {}),
        ("lead", "time per card", reverse("lead_card_times", args=s), {}),
        ("lead", "browser, no filter", reverse("lead_browse", args=s), {}),
        (
            "lead",
            "browser, disputed cards",
            reverse("lead_browse", args=s) + "?state=disputed",
            {},
        ),
        (
            "lead",
            'browser, search "edge case"',
            reverse("lead_browse", args=s) + "?q=edge+case",
            {},
        ),
        (
            "lead",
            'browser, "edge case", page 10',
            reverse("lead_browse", args=s) + "?q=edge+case&page=10",
            {},
        ),
        (
            "lead",
            f'browser, search "{MIDDLING}"',
            reverse("lead_browse", args=s) + "?" + urlencode({"q": MIDDLING}),
            {},
        ),
        (
            "lead",
            "browser, search rare",
            reverse("lead_browse", args=s) + "?" + urlencode({"q": RARE}),
            {},
        ),
        (
            "lead",
            'browser, "edge case", count all',  # asked for: every match read
            reverse("lead_browse", args=s) + "?q=edge+case&count=all",
            {},
        ),
        ("lead", "moderation queue", reverse("moderate_queue", args=s), {}),
        ("moderator", "moderation queue", reverse("moderate_queue", args=s), {}),
        ("lead", "conversations", reverse("lead_conversations", args=s), {}),
        ("lead", "methods text", reverse("report_methods", args=s), {}),
        ("lead", "API, annotations", reverse("api-annotations", args=s), {}),
    ]


USERS = {"annotator": "ann1", "lead": "lead", "moderator": "moderator", "anyone": "lead"}


def measure(
    runs: int, only: str = "", slowest: int = 0, listed: list | None = None, users: dict = USERS
) -> list[dict]:
    """Each page of `listed` (pages(): the issue's table), its first the floor, opened as
    the username `users` gives its `who`."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    clients = {}
    for who, username in users.items():
        clients[who] = Client()
        clients[who].force_login(get_user_model().objects.get(username=username))
    rows = []
    listed = pages() if listed is None else listed
    for who, name, url, headers in listed:
        wanted = [w for w in only.split(",") if w]
        if wanted and not any(w in name for w in wanted) and name != listed[0][1]:
            continue
        client = clients[who]
        for _ in range(2):  # warm: templates compiled, caches filled
            response = client.get(url, **headers)
        assert response.status_code in (200, 302), (name, url, response.status_code)
        times, queries, in_sql = [], [], []
        for _ in range(runs):
            counter = Counter()
            with connection.execute_wrapper(counter):
                started = time.perf_counter()
                response = client.get(url, **headers)
                times.append((time.perf_counter() - started) * 1000)
            queries.append(counter.n)
            in_sql.append(sum(ms for ms, _ in counter.timed))
        if slowest:
            print(f"{who}, {name}: its slowest queries (last run)")
            for ms, sql in sorted(counter.timed, reverse=True)[:slowest]:
                print(f"  {ms:7.1f} ms  {sql[:400]}")
        status = response.status_code
        rows.append(
            {"who": who, "page": name, "url": url, "status": status, "queries": max(queries),
             "p50": statistics.median(times), "p95": _pct(times, 95),
             "sql": statistics.median(in_sql)}
        )  # fmt: skip
    return rows


def count_floor(text: str, runs: int) -> float:
    """The floor of counting every conversation that holds `text`: the database counting
    the turns that match, through the same trigram indexes and plan as the search, and
    nothing else (no conversation, no page, no request): the median ms of `runs`."""
    from annotation.db.textsearch import index_plan, turns_containing

    times = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        with index_plan(text):
            turns_containing(text).count()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[1:])


def report(rows: list[dict], vendor: str, info: dict, runs: int, title: str = "") -> None:
    floor = rows[0]["p50"]
    title = title or (
        f"{info['conversations']} conversations, {info['turns']} turns, "
        f"{info['labels']} round-1 labels"
    )
    print(f"\n{vendor}: {title}; {runs} runs a page, warm, DEBUG off")
    print(
        f"  {'who':<10} {'page':<32} {'median':>9} {'p95':>9} {'queries':>8} {'in SQL':>9} "
        f"{'x floor':>8}"
    )
    for r in rows:
        note = "" if r["status"] == 200 else f"  (HTTP {r['status']})"
        print(
            f"  {r['who']:<10} {r['page']:<32} {r['p50']:7.1f}ms {r['p95']:7.1f}ms "
            f"{r['queries']:>8} {r['sql']:7.1f}ms {r['p50'] / floor:8.1f}{note}"
        )
    counted = [r for r in rows if r["page"].endswith("count all")]
    if counted:
        floor_ms = count_floor("edge case", runs)
        print(
            f'  count all\'s floor: the database counting the turns that hold "edge case" '
            f"by the same indexes, {floor_ms:.1f} ms; the page {counted[0]['p50'] / floor_ms:.1f}"
            f" x that"
        )
    print("  in SQL: the median of the time its queries took (the database's share)")
    print("  x floor: the page's median over the health check's (one SELECT 1, same middleware)")
    print("  load average during the run: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="conversations in the study")
    parser.add_argument("--runs", type=int, default=20, help="requests timed per page")
    parser.add_argument("--reuse", action="store_true", help="keep the study built before")
    parser.add_argument("--sqlite", action="store_true", help="allow the embedded SQLite")
    parser.add_argument(
        "--without-triggers",
        action="store_true",
        help="PostgreSQL: build with the kept figures' triggers off (their cost; figures wrong)",
    )
    parser.add_argument(
        "--only", default="", help="only the pages whose name holds this (several: a,b)"
    )
    parser.add_argument(
        "--slowest", type=int, default=0, help="print each page's N slowest queries"
    )
    args = parser.parse_args()
    vendor = start(args)
    from annotation.models import Annotation

    study = built_before(SLUG, f"pages_bench n={args.n}", "pages_bench")
    if study is None:
        if args.without_triggers and vendor == "postgresql":
            from django.db import connection

            tables = ["annotation_study", "annotation_group", "annotation_conversation"]
            tables += ["annotation_assignment", "annotation_cardstate", "annotation_annotation"]
            with connection.cursor() as cursor:  # the app's triggers, not the foreign keys'
                for table in [*tables, "annotation_consensus"]:
                    cursor.execute(f'ALTER TABLE "{table}" DISABLE TRIGGER USER')
        info = build(args.n)
        print(
            f"built {info['conversations']} conversations, {info['turns']} turns and "
            f"{info['labels']} labels in {info['build_s']:.1f} s "
            f"({info['conversations'] / info['build_s']:.0f} conversations/s); agreement job "
            f"{info['agreement_job']} in {info['agreement_s']:.1f} s"
        )
    else:
        print("reusing the study built before")
        info = {
            "conversations": study.conversations.count(),
            "turns": sum(study.conversations.values_list("n_turns", flat=True)),
            "labels": Annotation.objects.filter(turn__conversation__study=study).count(),
        }
    kept_times()
    report(measure(args.runs, args.only, args.slowest), vendor, info, args.runs)


if __name__ == "__main__":
    main()
