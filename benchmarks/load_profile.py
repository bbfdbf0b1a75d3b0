"""Where the time goes for the load test's requests (benchmarks/load_test.py), server side
with Django's test client: queries (each traced to the app's line that ran it) and cProfile's
top functions for the card's GET (page and htmx), the context partial and the label POST.

    CARDSORT_DATA_DIR=var/bench-load .venv/bin/python benchmarks/load_profile.py [--n 20]

Run it on the database load_test.py built (same environment: its --data-dir, or the
DATABASE_URL it used)."""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import time
from pathlib import Path

from card_keys_bench import QueryTimer, _django, backend_env
from load_test import DATA_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--user", default="g05a")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-profile", action="store_true", help="times only (cProfile slows)")
    args = parser.parse_args()
    # the server's environment as load_test.py starts it (production settings, DEBUG off);
    # the settings read it at import
    data_dir = Path(os.environ.get("CARDSORT_DATA_DIR", DATA_DIR))
    os.environ.update(backend_env(os.environ.get("DATABASE_URL"), data_dir))
    _django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Study, Turn

    study = Study.objects.get(slug="bench10k")
    user = get_user_model().objects.get(username=args.user)
    client = Client()
    client.force_login(user)
    ids = list(Turn.objects.for_annotator(study, user).todo(user).values_list("pk", flat=True))
    code = study.taxonomy_version.type_list()[0].code
    htmx = {"HTTP_HX_REQUEST": "true"}
    kinds = {
        "card page": lambda url: client.get(url),
        "card htmx": lambda url: client.get(url, **htmx),
        "context": lambda url: client.get(url + "context/", **htmx),
        "label": lambda url: client.post(url, {"types": code}, **htmx),
    }
    profiler = cProfile.Profile()
    stats: dict[str, list] = {k: [] for k in kinds}
    where: dict[str, dict[str, list]] = {k: {} for k in kinds}  # line: [queries, ms]
    for i, turn_id in enumerate(ids[: args.n + 2]):
        url = reverse("card", args=[study.slug, turn_id])
        for kind, call in kinds.items():
            timer = QueryTimer()
            with connection.execute_wrapper(timer):
                if i >= 2 and not args.no_profile:
                    profiler.enable()
                started = time.perf_counter()
                response = call(url)
                ms = (time.perf_counter() - started) * 1000
                profiler.disable()
            assert response.status_code == 200, (kind, response.status_code)
            if i < 2:
                continue
            stats[kind].append((ms, len(timer.queries), sum(q[2] for q in timer.queries)))
            for line, _sql, q_ms in timer.queries:
                seen = where[kind].setdefault(line, [0, 0.0])
                seen[0] += 1
                seen[1] += q_ms
    n = args.n
    for kind, rows in stats.items():
        ms = statistics.median(r[0] for r in rows)
        print(f"{kind}: {ms:.1f} ms p50, {max(r[1] for r in rows)} queries, ", end="")
        print(f"{statistics.median(r[2] for r in rows):.1f} ms in SQL")
        print("    queries  ms  (per request, by the app's line that ran them)")
        for line, (count, q_ms) in sorted(where[kind].items(), key=lambda kv: -kv[1][1]):
            print(f"    {count / n:5.1f} {q_ms / n:5.1f}  {line}")
    if args.no_profile:
        return
    out = io.StringIO()
    stats_ = pstats.Stats(profiler, stream=out)
    # the app's own functions by cumulative time, then every function by its own time
    stats_.sort_stats("cumulative").print_stats(r"/(annotation|taxonomy)/", args.top)
    stats_.sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
