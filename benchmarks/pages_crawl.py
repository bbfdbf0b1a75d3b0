"""Every GET route of the big study, for each role (issue 25): pages_bench.py times the pages
the issue lists; this one walks every route of the URL map that a study's reader reaches
(the pages under /s/<slug>/ and the API under /api/studies/<slug>/), fills its arguments
from the study that pages_bench.py built (a disputed card, its conversation, the group, the
agreement job, an annotator's label), and times each as the annotator, the moderator and the
lead: the median of --runs warm requests and the queries of the last, slowest first, with
the ratio to the health check. A route it cannot fill (an episode, an extraction run, a
proposal: none in this study) or that answers no GET (405) is listed as such, not timed.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cardsort_pages \\
        .venv/bin/python benchmarks/pages_crawl.py [--n 100000] [--runs 3] [--over 200]

The study is pages_bench.py's: built there first (or here, when the database holds none, as
pages_bench.py builds it). --over prints only the routes whose median is over that many ms
(with the count of those under it). With `PGOPTIONS="-c statement_timeout=60000"` a route
whose query runs for over a minute answers 500 and the crawl goes on."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pages_bench as bench  # noqa: E402  (benchmarks/pages_bench.py)

ROLES = {"annotator": "ann1", "moderator": "moderator", "lead": "lead"}
SKIPPED_NAMES = {"logout", "admin"}  # nothing of a study


def _values() -> dict[str, object]:
    """A value for each URL argument, from the study pages_bench.py built."""
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, CardState, CardStatus, Job, JobKind, Study

    study = Study.objects.get(slug=bench.SLUG)
    state = (
        CardState.objects.filter(group__study=study, status=CardStatus.DISPUTED)
        .select_related("turn")
        .order_by("turn_id")
        .first()
    )
    ann = get_user_model().objects.get(username="ann1")
    job = Job.objects.filter(study=study, kind=JobKind.AGREEMENT).order_by("-pk").first()
    label = Annotation.objects.filter(turn_id=state.turn_id, annotator=ann).first()
    return {
        "slug": bench.SLUG,
        "turn_id": state.turn_id,
        "conversation_id": state.turn.conversation_id,
        "group_id": state.group_id,
        "job_id": job.pk,
        "annotation_id": label.pk if label else None,
        "user_id": ann.pk,
        "index": state.turn.index,
        "part": "reply",
        "fmt": "csv",
    }


def routes() -> list[tuple[str, str]]:
    """(name, pattern) of every named route under a study, pages and API alike."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[tuple[str, str]] = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and p.name:
                found.append((p.name, prefix + str(p.pattern)))

    walk(get_resolver().url_patterns, "")
    return [
        (name, pattern)
        for name, pattern in found
        if ("<slug:slug>" in pattern and not any(s in name for s in SKIPPED_NAMES))
    ]


def _url(name: str, pattern: str, values: dict) -> str | None:
    import re

    from django.urls import reverse

    wanted = re.findall(r"<(?:\w+:)?(\w+)>", pattern)
    if any(values.get(w) is None for w in wanted):
        return None
    return reverse(name, kwargs={w: values[w] for w in wanted})


def crawl(runs: int) -> tuple[list[dict], list[str]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    values = _values()
    clients = {}
    for role, username in ROLES.items():
        clients[role] = Client(raise_request_exception=False)  # a 500 is listed, as a 404
        clients[role].force_login(get_user_model().objects.get(username=username))
    rows, unfilled = [], []
    for name, pattern in routes():
        url = _url(name, pattern, values)
        if url is None:
            unfilled.append(name)
            continue
        for role, client in clients.items():
            response = client.get(url)
            if response.status_code == 405:
                break  # no GET: the same for every role
            times, counter = [], bench.Counter()
            for _ in range(runs):
                counter = bench.Counter()
                with connection.execute_wrapper(counter):
                    started = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - started) * 1000)
            rows.append({"role": role, "name": name, "url": url, "p50": statistics.median(times),
                         "status": response.status_code, "queries": counter.n})  # fmt: skip
    return rows, unfilled


def floor(runs: int) -> float:
    from django.test import Client
    from django.urls import reverse

    client = Client()  # as pages_bench.py's floor: one SELECT 1 through the same middleware
    client.get(reverse("healthz"))
    times = []
    for _ in range(max(runs, 5)):
        started = time.perf_counter()
        client.get(reverse("healthz"))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="conversations in the study")
    parser.add_argument("--runs", type=int, default=3, help="requests timed per route and role")
    parser.add_argument("--over", type=float, default=0, help="print only routes over N ms")
    parser.add_argument("--sqlite", action="store_true", help="allow the embedded SQLite")
    args = parser.parse_args()
    args.reuse = True  # the study pages_bench.py built, or built once here
    vendor = bench.start(args)
    import logging

    # a 403 or a 404 is a route's answer to a role here, not news: no traceback for each
    logging.getLogger("django.request").setLevel(logging.CRITICAL)
    if bench.built_before(bench.SLUG, f"pages_bench n={args.n}", "pages_crawl") is None:
        bench.build(args.n)
    bench.kept_times()
    base = floor(args.runs)
    rows, unfilled = crawl(args.runs)
    rows.sort(key=lambda r: -r["p50"])
    shown = [r for r in rows if r["p50"] > args.over]
    print(f"\n{vendor}, --n {args.n}: {len(rows)} route x role pairs timed, {args.runs} runs each,")
    print(f"warm, DEBUG off; the health check (the floor) {base:.1f} ms")
    print(f"  {'role':<10} {'route':<28} {'median':>9} {'queries':>8} {'x floor':>8} status")
    for r in shown:
        print(
            f"  {r['role']:<10} {r['name']:<28} {r['p50']:7.1f}ms {r['queries']:>8} "
            f"{r['p50'] / base:8.1f} {r['status']}  {r['url']}"
        )
    if args.over:
        print(f"  ({len(rows) - len(shown)} more under {args.over:.0f} ms)")
    print(f"  not timed (nothing in the study to fill them): {', '.join(sorted(unfilled))}")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  load average during the run: {load}")


if __name__ == "__main__":
    main()
