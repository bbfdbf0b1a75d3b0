"""Card keys benchmark: keypress to next card, measured in Chromium, on the demo study and on
a study of 10,000 conversations (issue 9; the aim: p95 under 150 ms on this machine).

    .venv/bin/python benchmarks/card_keys_bench.py [--n 200] [--conversations 10000]
        [--groups 10] [--server runserver|gunicorn] [--backends sqlite,postgres]

For each backend (SQLite, the embedded default, in var/bench-card-keys/; PostgreSQL too when
DATABASE_URL names a server, on a database `cardsort_card_keys_bench` created and dropped
there) it builds a fresh database: the demo of `make run` (`manage.py demo`) and a study of
--conversations generated coding conversations (card_keys_study.py), then starts the app in
a real server process as `make run` does (runserver, DEBUG off, static files collected),
logs in as an annotator in Debian's /usr/bin/chromium (never a downloaded browser) and
presses keys on --n cards of each study:
  `n`           next card without labelling;
  type + Enter  a type key, then Enter (submit; the next card comes back in the answer).
The page itself times each one: performance.now() at the key's keydown to the moment a
MutationObserver sees #card show another turn id (and to the next frame after it, painted).
When the annotator's queue runs out (the demo's has a few dozen cards), their labels on
the cards still in round 1 are deleted (untimed) and the run goes on over the same cards.

Then, with the browser gone, it profiles the server side on the big study with Django's
test client (no HTTP, same views and middleware): queries and milliseconds per request of
the card's GET (htmx partial, and the whole page) and of its POST, and the slowest queries."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pg import pg_admin  # benchmarks/pg.py; a script's folder is on sys.path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "var" / "bench-card-keys"  # the default of --data-dir
PG_DATABASE = "cardsort_card_keys_bench"
PASSWORD = "bench-" + "password"  # the big study's annotators
AIM_MS = 150
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TYPE_KEYS = ["1", "2", "3", "4", "0"]

# Installed before any script of every page: times `n` and Enter from keydown (capture phase,
# before labels.js acts on it) to #card showing another turn, then to the next frame.
MEASURE_JS = """
(() => {
  const bench = (window.__bench = { samples: [], pending: null });
  const cardId = () => document.getElementById("card")?.dataset.turnId;
  addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === "n") && !e.ctrlKey && cardId())
      bench.pending = { key: e.key, from: cardId(), t0: performance.now() };
  }, true);
  new MutationObserver(() => {
    const p = bench.pending;
    if (!p || !cardId() || cardId() === p.from) return;
    bench.pending = null;
    const sample = { key: p.key, to: cardId(), swapped: performance.now() - p.t0 };
    // the request's own share (sent -> last byte received), from the resource timings
    const requests = performance.getEntriesByType("resource").filter(
      (r) => r.initiatorType === "xmlhttprequest" && r.startTime >= p.t0);
    const r = requests[requests.length - 1];
    sample.request = r ? r.responseEnd - r.startTime : null;
    performance.clearResourceTimings();
    requestAnimationFrame(() => setTimeout(() => {
      sample.painted = performance.now() - p.t0;
      bench.samples.push(sample);
    }));
  }).observe(document, { childList: true, subtree: true, attributes: true,
                         attributeFilter: ["data-turn-id"] });
})();
"""


# --- in a subprocess with Django set up (the settings read the environment at import) --------


def _django():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def worker_setup(studies: list[str], n_conversations: int, n_groups: int) -> dict:
    _django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Study, Turn

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    out = {}
    if "demo" in studies:
        started = time.perf_counter()
        call_command("demo", stdout=open(os.devnull, "w"))
        out["demo"] = {"slug": "demo", "annotator": "alice", "password": "demo"}
        out["demo"]["seconds"] = time.perf_counter() - started
    if "10k" in studies:
        import card_keys_study

        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="cardsort-card-keys-") as tmp:
            info = card_keys_study.build(Path(tmp), n_conversations, n_groups, PASSWORD)
        out["10k"] = info | {"password": PASSWORD, "seconds": time.perf_counter() - started}
    from annotation.models.queue import rebuild

    for info in out.values():
        # the annotators' kept queues (annotation/models/queue.py), which the study's bulk
        # writes (card_keys_study: COPY and bulk_create) do not keep
        rebuild(Study.objects.get(slug=info["slug"]).pk)
    if connection.vendor == "postgresql":
        # what autovacuum does soon after a bulk import; without it the planner sees empty
        # tables and walks whole indexes (autovacuum may be off, as on this machine's server)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    for info in out.values():
        study = Study.objects.get(slug=info["slug"])
        user = get_user_model().objects.get(username=info["annotator"])
        cards = Turn.objects.for_annotator(study, user)
        info["cards"], info["conversations"] = cards.count(), study.conversations.count()
        info["todo"] = cards.todo(user).count()
    return out


def worker_reset(slug: str, username: str) -> dict:
    """Delete the annotator's round-1 labels on the cards still in round 1 in their group:
    those are to label again (a card that left round 1 would stay locked)."""
    _django()
    from django.db.models import Exists, OuterRef

    from annotation.models import Annotation, CardState, CardStatus

    left_round_1 = CardState.objects.filter(
        turn_id=OuterRef("turn_id"), group__annotators__username=username
    ).exclude(status=CardStatus.OPEN)
    mine = Annotation.objects.filter(
        annotator__username=username, round=1, turn__conversation__study__slug=slug
    ).exclude(Exists(left_round_1))
    deleted = mine.delete()[0]
    # the annotator's kept queue (annotation/models/queue.py) learns its cards are to do again
    from django.contrib.auth import get_user_model

    from annotation.models import Study
    from annotation.models.queue import rebuild

    user = get_user_model().objects.get(username=username)
    rebuild(Study.objects.get(slug=slug).pk, [user.pk])
    return {"deleted": deleted}


def worker_profile(slug: str, username: str, n: int) -> dict:
    """Queries and server time per card request, with the test client (no HTTP): each query
    timed and traced to the line of the app's code that ran it."""
    _django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Study, Turn

    study = Study.objects.get(slug=slug)
    user = get_user_model().objects.get(username=username)
    client = Client()
    client.force_login(user)
    ids = list(Turn.objects.for_annotator(study, user).todo(user).values_list("pk", flat=True))
    type_code = study.taxonomy_version.type_list()[0].code
    samples: dict[str, list[tuple[float, int, float]]] = {"GET htmx": [], "GET page": []}
    samples["POST"] = []
    shapes: dict[tuple[str, str, str], list[float]] = {}
    for i, turn_id in enumerate(ids[: n + 3]):
        url = reverse("card", args=[slug, turn_id])
        for kind, method, kwargs in (
            ("GET htmx", "get", {"HTTP_HX_REQUEST": "true"}),
            ("GET page", "get", {}),
            ("POST", "post", {"data": {"types": type_code}, "HTTP_HX_REQUEST": "true"}),
        ):
            timed = QueryTimer()
            with connection.execute_wrapper(timed):
                started = time.perf_counter()
                response = getattr(client, method)(url, **kwargs)
                ms = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, (kind, response.status_code)
            if i < 3:  # warm-up: the first requests compile templates, fill caches
                continue
            samples[kind].append((ms, len(timed.queries), sum(q[2] for q in timed.queries)))
            for where, sql, q_ms in timed.queries:
                shapes.setdefault((kind, where, sql), []).append(q_ms)
    slowest = sorted(shapes.items(), key=lambda kv: -statistics.median(kv[1]))[:8]
    return {
        "vendor": connection.vendor,
        "requests": {
            kind: {
                "n": len(rows),
                "ms_p50": statistics.median(ms for ms, _, _ in rows),
                "ms_p95": _pct([ms for ms, _, _ in rows], 95),
                "queries": max(q for _, q, _ in rows),
                "sql_ms": statistics.median(s for _, _, s in rows),
            }
            for kind, rows in samples.items()
        },
        "slowest": [
            {"request": kind, "where": where, "sql": sql, "ms": statistics.median(times)}
            for (kind, where, sql), times in slowest
        ],
    }


class QueryTimer:
    """connection.execute_wrapper: (app code line, SQL with placeholders, ms) of each query."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            ms = (time.perf_counter() - started) * 1000
            self.queries.append((_app_frame(), sql, ms))


def _app_frame() -> str:
    """The innermost frame of the app's own code (annotation/, taxonomy/) on the stack."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(str(ROOT)) and "/.venv/" not in path and "/benchmarks/" not in path:
            return f"{Path(path).relative_to(ROOT)}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def _pct(values: list[float], p: float) -> float:
    """The p-th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


# --- the driver -------------------------------------------------------------------------------


def run_worker(env: dict, *args: str) -> dict:
    command = [sys.executable, __file__, "--worker", *args]
    out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"worker {args[0]} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def backend_env(database_url: str | None, data_dir: Path) -> dict:
    env = dict(
        os.environ,
        CARDSORT_DATA_DIR=str(data_dir),
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
    )
    env |= {"ALLOWED_HOSTS": "127.0.0.1,localhost,testserver", "LOG_LEVEL": "WARNING"}
    # plain http on 127.0.0.1: no redirect to https, and cookies marked Secure would not come back
    env |= {"SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"}
    env |= {"SECURE_SSL_REDIRECT": "false"}
    env.pop("DATABASE_URL", None)  # SQLite: the embedded default, data_dir/cardsort.sqlite3
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict, server: str, port: int, log: Path) -> subprocess.Popen:
    if server == "gunicorn":
        command = [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application"]
        command += ["--bind", f"127.0.0.1:{port}", "--workers", "2"]
    else:  # what `make run` runs
        command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log.open("w"), stderr=-2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2)
            return process
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.2)
    process.kill()
    sys.exit(f"the server did not start; its log:\n{log.read_text()[-4000:]}")


def log_in(browser, base: str, username: str, password: str):
    context = browser.new_context()
    context.set_default_timeout(15_000)
    context.add_init_script(MEASURE_JS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{base}/accounts/login/")
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")
    return context, page, errors


def ready(page) -> None:
    """A card is shown and htmx has wired its form: a key may be pressed."""
    page.wait_for_function(
        "() => document.querySelector('#card form')?.['htmx-internal-data']?.initHash"
    )


def next_sample(page, timeout: float = 15.0) -> dict | None:
    """The sample of the key just pressed, or None when the page left the card (the queue
    ran out: its "all done" page)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            sample, path = page.evaluate("[window.__bench?.samples.shift(), location.pathname]")
        except Exception:  # a page load under way
            sample, path = None, ""
        if sample:
            return sample
        if path.endswith("/queue/"):
            page.wait_for_load_state("load")
            if page.locator("#card").count() == 0:
                return None
        time.sleep(0.01)
    raise TimeoutError("no next card")


def drive(browser, base: str, info: dict, n: int, warmup: int, env: dict) -> dict:
    context, page, errors = log_in(browser, base, info["annotator"], info["password"])
    queue = f"{base}/s/{info['slug']}/queue/"
    series: dict[str, list[dict]] = {"n": [], "type + Enter": []}
    resets = 0
    # `n` from the first card to label onwards; back to it when the last card has no next
    page.goto(queue)
    start = page.url
    while len(series["n"]) < n + warmup:
        ready(page)
        if page.locator('#card [data-nav="next"]').count() == 0:
            page.goto(start)
            continue
        page.keyboard.press("n")
        series["n"].append(next_sample(page))
    page.goto(queue)
    while len(series["type + Enter"]) < n + warmup:
        if page.locator("#card").count() == 0:  # all done: the same cards again (untimed)
            if not run_worker(env, "reset", info["slug"], info["annotator"])["deleted"]:
                sys.exit(f"{info['annotator']} has no card left to label in {info['slug']}")
            resets += 1
            page.goto(queue)
            continue
        ready(page)
        page.keyboard.press(TYPE_KEYS[len(series["type + Enter"]) % len(TYPE_KEYS)])
        page.keyboard.press("Enter")
        sample = next_sample(page)
        if sample is not None:
            series["type + Enter"].append(sample)
    context.close()
    if errors:
        print(f"  page errors: {errors[:3]}")
    if resets:
        print(
            f"  {info['slug']}: the queue ran out {resets} times: labels deleted, same cards again"
        )
    return {key: samples[warmup:] for key, samples in series.items()}


def print_results(backend: str, server: str, info: dict, results: dict) -> None:
    print(f"\n{backend}, {server}, DEBUG off:")
    head = f"  {'study':<28} {'keys':<13} {'p50':>7} {'p95':>7} {'max':>7} {'n':>5}"
    print(head + f" {'p95 painted':>12} {'p50 request':>12}  p95/{AIM_MS} ms")
    for study, series in results.items():
        i = info[study]
        name = f"{study} ({i['conversations']} conv, {i['cards']} cards)"
        for keys, samples in series.items():
            swapped = [s["swapped"] for s in samples]
            painted = _pct([s["painted"] for s in samples], 95)
            request = statistics.median([s["request"] or 0 for s in samples])
            p95 = _pct(swapped, 95)
            print(
                f"  {name:<28} {keys:<13} {statistics.median(swapped):6.0f}ms {p95:6.0f}ms "
                f"{max(swapped):6.0f}ms {len(swapped):>5} {painted:10.0f}ms {request:10.0f}ms  "
                f"{p95 / AIM_MS:.2f}" + ("" if p95 < AIM_MS else "  over the aim")
            )
    print(
        f"  aim: p95 < {AIM_MS} ms from keydown to #card showing the next turn, in the page "
        "(painted: the next frame after it; request: the htmx request alone, sent to last byte)"
    )
    print("  load average during the run: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


def print_profile(backend: str, profile: dict) -> None:
    print(f"\n{backend}: server side on the big study (test client, no HTTP; per request)")
    print(f"  {'request':<10} {'n':>4} {'p50':>8} {'p95':>8} {'queries':>8} {'in SQL':>8}")
    for kind, r in profile["requests"].items():
        print(
            f"  {kind:<10} {r['n']:>4} {r['ms_p50']:6.1f}ms {r['ms_p95']:6.1f}ms "
            f"{r['queries']:>8} {r['sql_ms']:6.1f}ms"
        )
    print("  slowest queries (median ms; the request, the app's line that ran it, the SQL):")
    for q in profile["slowest"]:
        print(f"    {q['ms']:6.2f} ms  {q['request']:<8}  {q['where']}")
        print(f"              {q['sql'][:300]}")


def run_backend(backend: str, database_url: str | None, args) -> None:
    data_dir = Path(args.data_dir).resolve()
    env = backend_env(database_url, data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)  # a fresh database (and static files)
    data_dir.mkdir(parents=True)
    studies = args.studies.split(",")
    started = time.perf_counter()
    info = run_worker(env, "setup", args.studies, str(args.conversations), str(args.groups))
    for name, i in info.items():
        print(
            f"{backend}: {name}: {i['conversations']} conversations; annotator {i['annotator']} "
            f"has {i['cards']} cards, {i['todo']} to label (built in {i['seconds']:.0f} s)"
        )
    print(f"{backend}: database ready in {time.perf_counter() - started:.0f} s")
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = start_server(env, args.server, port, data_dir / "server.log")
    results = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for study in studies:
                base = f"http://127.0.0.1:{port}"
                results[study] = drive(browser, base, info[study], args.n, args.warmup, env)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print_results(backend, args.server, info, results)
    if "10k" in info and args.profile:
        # another annotator of the big study, at the same point of their queue as the one
        # the browser drove
        user = "g02a" if args.groups > 1 else "g01a"
        profile = run_worker(env, "profile", info["10k"]["slug"], user, str(args.profile))
        print_profile(backend, profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="cards timed per study and key")
    parser.add_argument("--warmup", type=int, default=5, help="first cards not counted")
    parser.add_argument("--conversations", type=int, default=10_000, help="the big study's")
    parser.add_argument("--groups", type=int, default=10, help="groups of two in the big study")
    parser.add_argument("--studies", default="demo,10k")
    parser.add_argument("--server", choices=["runserver", "gunicorn"], default="runserver")
    parser.add_argument(
        "--data-dir", default=str(DATA_DIR), help="emptied first: the SQLite file, static files"
    )
    parser.add_argument("--profile", type=int, default=50, help="cards profiled server side")
    default_backends = "sqlite,postgres" if os.environ.get("DATABASE_URL", "") else "sqlite"
    parser.add_argument("--backends", default=default_backends)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_run_worker_command(args.worker)))
        return
    database_url = os.environ.get("DATABASE_URL", "")
    for backend in args.backends.split(","):
        if backend == "sqlite":
            run_backend("sqlite", None, args)
        elif not database_url.startswith("postgres"):
            print("postgres: skipped (set DATABASE_URL=postgres://... to run it)")
        else:
            parts = urlsplit(database_url)
            server = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
            pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            pg_admin(server, f"CREATE DATABASE {PG_DATABASE}")
            try:
                run_backend("postgres", f"{server}/{PG_DATABASE}", args)
            finally:
                pg_admin(server, f"DROP DATABASE IF EXISTS {PG_DATABASE}")


def _run_worker_command(words: list[str]) -> dict:
    command, *values = words
    if command == "setup":
        return worker_setup(values[0].split(","), int(values[1]), int(values[2]))
    if command == "reset":
        return worker_reset(values[0], values[1])
    return worker_profile(values[0], values[1], int(values[2]))


if __name__ == "__main__":
    main()
