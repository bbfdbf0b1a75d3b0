"""Load test: annotators over HTTP through gunicorn, with a realistic and a stress profile
(issue 12, point 7; the aim: p95 under 100 ms for the label request, realistic profile).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cardsort_load \\
        .venv/bin/python benchmarks/load_test.py [--profiles realistic,stress] [--users 50]
        [--duration 90] [--think 5,20] [--threads 20] [--conversations 2000]

It builds a fresh database (PostgreSQL when DATABASE_URL names one: that database is dropped
and created again, so give it a database of its own; else SQLite in --data-dir): a study of
--conversations generated coding conversations shared among --users/2 groups of two
annotators, half-labelled already (card_keys_study.py), then starts gunicorn as production
runs it (DEBUG=0, a SECRET_KEY, CONN_MAX_AGE=60, --workers/--worker-threads) and logs every
annotator in once (from one address: a login rate limit must allow --users successful
logins; AXES_ENABLED=0 is set in the server's environment in case a limit counts those).

Each annotator is a thread that replays the requests the browser sends (htmx headers, the
X-CSRFToken header of base.html, the labels form's fields as labels.js posts them):
  card page  the queue, redirected to the first card to label, as a whole page;
  context    `c`: the earlier turns' partial (half the cards past turn 1);
  card htmx  `p` then `n`: the previous card's partial and back (one card in five);
  label      the labels form's submit (0-2 types, or no smell), answered with the next card.
realistic: --users annotators, a card every --think seconds (uniform); a sampler asks the
trivial view (/healthz if the server has it, else the login page's GET) twice a second.
stress: --threads annotators, no think time; then the same threads on the trivial view alone.

It prints p50, p95 and p99 per request kind, the throughput per core, the ratio to the trivial
view, and checks the database: every label the server accepted is stored exactly once (one
round-1 row per accepted submit, with the types sent), and none more. The last line sums it
up. Timings on a shared machine are contaminated: the figures say so with the load average,
and each profile prints the gunicorn workers' CPU per request too (from /proc: what a busy
machine inflates far less than wall time). The annotator's client is load_client.py."""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests
from card_keys_bench import backend_env, free_port
from load_client import PASSWORD, Annotator, Log, annotate, hammer_trivial, trivial_url
from pg import pg_admin

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "var" / "bench-load"
AIM_MS = 100
KINDS = ["card page", "card htmx", "context", "label", "trivial"]


def server_cpu(master: int) -> float:
    """CPU seconds (user + system) the gunicorn workers of `master` have used so far: what a
    request costs the app's processes, however busy the machine (PostgreSQL's not counted)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == master:  # ppid; utime and stime in clock ticks
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_profile(name: str, base: str, slug: str, users: list[str], args, master: int) -> dict:
    log = Log()
    think = (0.0, 0.0) if name == "stress" else args.think
    people = [
        Annotator(base, slug, username, log, random.Random(f"{args.seed}-{name}-{i}"))
        for i, username in enumerate(users)
    ]
    # each logs in once (a password hash each: slow on purpose), a few at a time
    with ThreadPoolExecutor(max_workers=8) as pool:
        annotators = [
            who for who, ok in zip(people, pool.map(Annotator.log_in, people), strict=True) if ok
        ]
    print(f"{name} profile: {len(annotators)} logged in; {args.duration:.0f} s of load")
    trivial = trivial_url(base)
    started_at = datetime.now(UTC).isoformat()
    cpu = server_cpu(master)
    started = time.monotonic()
    until = started + args.duration
    threads = [threading.Thread(target=annotate, args=(w, think, until)) for w in annotators]
    if name == "realistic":
        sampler = (base, trivial, log, until, 0.5)
        threads.append(threading.Thread(target=hammer_trivial, args=sampler))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    result = {"name": name, "log": log, "elapsed": elapsed, "since": started_at}
    result["cpu"] = server_cpu(master) - cpu
    result["trivial_url"] = trivial
    if name == "stress":  # the floor: the same threads on the trivial view alone
        floor = Log()
        cpu = server_cpu(master)
        until = time.monotonic() + args.trivial_duration
        hammer = [
            threading.Thread(target=hammer_trivial, args=(base, trivial, floor, until, 0))
            for _ in users
        ]
        for t in hammer:
            t.start()
        for t in hammer:
            t.join()
        result["floor"] = floor
        result["floor_cpu"] = server_cpu(master) - cpu
        result["floor_elapsed"] = args.trivial_duration
    return result


def pct(values: list[float], p: float) -> float:
    """The p-th percentile, nearest rank (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def report(result: dict, users: int, verified: dict) -> dict:
    log, name, elapsed = result["log"], result["name"], result["elapsed"]
    cores = os.cpu_count() or 1
    by_kind = {k: [ms for kind, ms, _ in log.samples if kind == k] for k in KINDS}
    app = [ms for kind, ms, _ in log.samples if kind != "trivial"]
    print(f"\n{name}: {users} annotators, {elapsed:.0f} s, trivial view {result['trivial_url']}")
    print(f"  {'request':<10} {'n':>6} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}")
    for kind, values in by_kind.items():
        if values:
            row = [pct(values, 50), pct(values, 95), pct(values, 99), max(values)]
            print(f"  {kind:<10} {len(values):>6}" + "".join(f" {v:6.0f}ms" for v in row))
    rate = len(app) / elapsed
    print(f"  throughput: {rate:.1f} requests/s, {rate / cores:.1f} per core ({cores} cores)")
    # the app's CPU per request: what the busy machine does not inflate much, and the
    # throughput per core it allows (gunicorn's processes only; PostgreSQL adds its share)
    cpu_ms = result["cpu"] * 1000 / max(1, len(log.samples))
    print(
        f"  server CPU: {cpu_ms:.0f} ms per request (gunicorn workers, all kinds), "
        f"{1000 / cpu_ms if cpu_ms else 0:.0f} requests/s per core at that cost"
    )
    label = by_kind["label"]
    trivial = by_kind["trivial"]
    ratio = pct(label, 50) / pct(trivial, 50) if label and trivial else 0.0
    if name == "stress":
        floor = [ms for _, ms, _ in result["floor"].samples]
        floor_rate = len(floor) / result["floor_elapsed"]
        floor_cpu = result["floor_cpu"] * 1000 / max(1, len(floor))
        print(
            f"  trivial view alone, same threads: {floor_rate:.1f} requests/s, "
            f"p50 {pct(floor, 50):.0f}ms p95 {pct(floor, 95):.0f}ms, "
            f"server CPU {floor_cpu:.0f} ms per request"
        )
        ratio = floor_rate / rate if rate else 0.0
        print(f"  ratio: the trivial view serves {ratio:.1f}x as many requests/s as the app's mix")
    else:
        print(f"  ratio: label p50 / trivial p50 = {ratio:.1f} (measured side by side)")
    statuses = {}
    for _, _, status in log.samples:
        statuses[status] = statuses.get(status, 0) + 1
    print(
        f"  statuses: {dict(sorted(statuses.items()))}; refused (409, round closed): {log.refused}"
    )
    for e in log.errors[:5]:
        print(f"  error: {e}")
    print(
        f"  labels accepted {verified['accepted']}, stored {verified['stored']}, "
        f"lost {verified['lost']}, duplicated {verified['duplicated']}, "
        f"unexpected {verified['unexpected']}, types differ {verified['mismatched']}"
    )
    if verified["unanswered"]:
        print(
            f"  submits without an answer (client timeout): {verified['unanswered']}, of them "
            f"stored by the server {verified['stored_unanswered']} (neither lost nor extra)"
        )
    print("  load average (loaded machine): " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    p95 = pct(label, 95)
    return {
        "errors": len(log.errors),
        "lost": verified["lost"] + verified["mismatched"],
        "duplicated": verified["duplicated"] + verified["unexpected"],
        "p95": p95,
        "ratio": ratio,
    }


# --- in a subprocess with Django set up -------------------------------------------------------


def worker_setup(n_conversations: int, n_groups: int, reuse: bool) -> dict:
    import card_keys_bench

    card_keys_bench._django()
    import card_keys_study
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Annotation, Study, Turn

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    started = time.perf_counter()
    import tempfile

    study = Study.objects.filter(slug=card_keys_study.SLUG).first()
    if reuse and study is not None:  # the study of an earlier run, with its labels
        info = {"slug": study.slug, "conversations": study.conversations.count()}
        info["turns"] = Turn.objects.filter(conversation__study=study).count()
        info["labels"] = Annotation.objects.filter(turn__conversation__study=study).count()
    else:
        with tempfile.TemporaryDirectory(prefix="cardsort-load-") as tmp:
            info = card_keys_study.build(Path(tmp), n_conversations, n_groups, PASSWORD)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # what autovacuum does soon after a bulk import
    users = get_user_model().objects.filter(username__regex=r"^g\d+[ab]$")
    info["users"] = sorted(users.values_list("username", flat=True), key=lambda u: (u[-1], u))
    info["seconds"] = time.perf_counter() - started
    return info


def worker_verify(path: str) -> dict:
    """The accepted submits (a JSON file) against the round-1 rows created since the run
    began: each exactly once, with the types sent, and no row nobody sent."""
    import card_keys_bench

    card_keys_bench._django()
    from annotation.models import Annotation

    sent = json.loads(Path(path).read_text())
    since = datetime.fromisoformat(sent["since"])
    rows = Annotation.objects.filter(
        annotator__username__in=sent["users"], round=1, created_at__gte=since
    ).prefetch_related("types")
    stored: dict[tuple[str, int], list] = {}
    for a in rows.select_related("annotator"):
        codes = sorted(t.code for t in a.types.all())
        stored.setdefault((a.annotator.username, a.turn_id), []).append(codes)
    accepted = {(s["username"], s["turn"]): s["types"] for s in sent["accepted"]}
    unanswered = {(s["username"], s["turn"]) for s in sent["unanswered"]}
    resent = len(sent["accepted"]) - len(accepted)  # one card submitted twice: not expected
    lost = [k for k in accepted if k not in stored]
    return {
        "accepted": len(sent["accepted"]),
        "stored": sum(len(v) for v in stored.values()),
        "lost": len(lost),
        "duplicated": sum(len(v) - 1 for v in stored.values()) + resent,
        "unexpected": sum(1 for k in stored if k not in accepted and k not in unanswered),
        "unanswered": len(unanswered),
        "stored_unanswered": sum(1 for k in unanswered if k in stored and k not in accepted),
        "mismatched": sum(1 for k, v in stored.items() if k in accepted and v[-1] != accepted[k]),
    }


# --- the driver -------------------------------------------------------------------------------


def gunicorn_env(env: dict, args) -> dict:
    env = dict(env, CONN_MAX_AGE="60", AXES_ENABLED="0")
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    # production settings (not the tests' module), served over plain http on 127.0.0.1
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "0"}
    env |= {"SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0"}
    env |= {"SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0"}
    return env


def start_gunicorn(env: dict, args, port: int, log: Path) -> subprocess.Popen:
    """gunicorn as production runs it (Dockerfile, docker-compose.yml: 3 sync workers for 2
    cores; --worker-threads above 1 makes them gthread workers); up once the login page
    answers."""
    command = [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application"]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", str(args.workers)]
    command += ["--threads", str(args.worker_threads), "--timeout", "60"]
    # connections kept open longer than a think time (the default 2 s would close them under
    # an annotator who reads, and a request sent as it closes fails: a client-side artifact)
    command += ["--keep-alive", "75"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log.open("w"), stderr=-2)
    deadline = time.monotonic() + 300  # a loaded machine boots workers slowly
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=10).ok:
                return process
        except requests.RequestException:
            if process.poll() is not None:
                break
            time.sleep(0.5)
    process.terminate()  # the arbiter stops its workers
    process.wait(timeout=60)
    sys.exit(f"gunicorn did not start; its log:\n{log.read_text()[-4000:]}")


def run(database_url: str | None, args) -> int:
    data_dir = Path(args.data_dir).resolve()
    if not args.reuse:
        shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    env = gunicorn_env(backend_env(database_url, data_dir), args)
    env["PYTHONPATH"] = str(ROOT / "benchmarks")
    groups = str(max(1, args.users // 2))
    info = run_worker_here(env, "setup", str(args.conversations), groups, str(int(args.reuse)))
    print(
        f"{'postgres' if database_url else 'sqlite'}: {info['conversations']} conversations, "
        f"{info['turns']} cards, {len(info['users'])} annotators, {info['labels']} labels "
        f"already (built in {info['seconds']:.0f} s); gunicorn --workers {args.workers} "
        f"--threads {args.worker_threads}"
    )
    port = free_port()
    server = start_gunicorn(env, args, port, data_dir / "server.log")
    summary = []
    try:
        for name in args.profiles.split(","):
            n = args.users if name == "realistic" else args.threads
            users = info["users"][:n]
            base = f"http://127.0.0.1:{port}"
            result = run_profile(name, base, info["slug"], users, args, server.pid)
            sent = {"since": result["since"], "users": users, "accepted": result["log"].accepted}
            sent["unanswered"] = result["log"].unanswered
            sent_path = data_dir / f"accepted-{name}.json"
            sent_path.write_text(json.dumps(sent))
            verified = run_worker_here(env, "verify", str(sent_path))
            summary.append((name, report(result, len(users), verified)))
    finally:
        server.terminate()
        server.wait(timeout=30)
    bad = 0
    for name, s in summary:
        aim = (
            ""
            if name != "realistic"
            else (" (aim < 100 ms)" if s["p95"] < AIM_MS else " OVER the aim of 100 ms")
        )
        print(
            f"SUMMARY {name}: errors {s['errors']}, lost labels {s['lost']}, duplicated "
            f"{s['duplicated']}, label p95 {s['p95']:.0f} ms{aim}, ratio to trivial "
            f"{s['ratio']:.1f} (loaded machine: load average {os.getloadavg()[0]:.1f})"
        )
        bad += s["errors"] + s["lost"] + s["duplicated"]
    return 1 if bad else 0


def run_worker_here(env: dict, *words: str) -> dict:
    """card_keys_bench.run_worker runs that file; ours is this one."""
    command = [sys.executable, __file__, "--worker", *words]
    out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"worker {words[0]} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="realistic,stress")
    parser.add_argument("--users", type=int, default=50, help="realistic: annotators")
    parser.add_argument("--threads", type=int, default=20, help="stress: annotators")
    parser.add_argument("--duration", type=float, default=90, help="seconds per profile")
    parser.add_argument("--trivial-duration", type=float, default=15, help="stress: the floor")
    parser.add_argument(
        "--think",
        type=lambda s: tuple(float(x) for x in s.split(",")),
        default=(5.0, 20.0),
        help="realistic: seconds per card, min,max",
    )
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (2 cores)")
    # 1: sync workers, as production runs them. With gthread workers (3 x 4 threads) each
    # keep-alive connection stays with one worker, whose threads then share one core's GIL:
    # the label request's p95 was 95 ms instead of 67 (2026-12-01, realistic profile)
    parser.add_argument("--worker-threads", type=int, default=1, help="gunicorn --threads")
    parser.add_argument("--seed", default="12")
    parser.add_argument("--data-dir", default=str(DATA_DIR), help="emptied first")
    parser.add_argument("--sqlite", action="store_true", help="SQLite even with DATABASE_URL")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the database of an earlier run (its study and labels) instead of building",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # a run's progress, also into a file
    if args.worker:
        command, *values = args.worker
        if command == "setup":
            print(json.dumps(worker_setup(int(values[0]), int(values[1]), values[2] == "1")))
        else:
            print(json.dumps(worker_verify(values[0])))
        return
    database_url = "" if args.sqlite else os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        sys.exit(run(None, args))
    parts = urlsplit(database_url)
    server = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    name = parts.path.lstrip("/") or "cardsort_load"
    if not args.reuse:
        pg_admin(server, f"DROP DATABASE IF EXISTS {name}")
        pg_admin(server, f"CREATE DATABASE {name}")
    sys.exit(run(f"{server}/{name}", args))


if __name__ == "__main__":
    main()
