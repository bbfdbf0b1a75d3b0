"""Agreement benchmark: the pure computation of the agreement report at a million cards,
then the whole agreement job and the gold export from PostgreSQL rows, each against
PostgreSQL's own floor for the rows it reads.

    .venv/bin/python benchmarks/agreement_bench.py [--cards 1000000] [--boot 200] [--seed 0]
        [--sections compute,job,export] [--pg-url postgres://postgres@127.0.0.1:5432]
        [--job-boot 1000] [--db-repeat 2] [--floor-repeat 3] [--keep-db | --reuse-db]

Sections "job" and "export" (see the comment "The whole job and the export" below) need a
PostgreSQL server; they create and drop the database cardsort_bench_agree (--keep-db keeps
it; --reuse-db uses the one an earlier run with the same --cards and --seed left, and keeps
it). They print, for the job and the gold export: seconds (the best of --db-repeat runs),
the floor (the best of --floor-repeat passes of COPY ... TO STDOUT over every row of the
tables the step reads, whole rows) and the ratio, against issue 8's aims (3 x, 5 x).

Section "compute":

Generates CARDS cards x 2 annotators (one group) x the 9 types of the interaction-smells
axis: sparse labels (each type on 0.5-8% of the cards) that the two annotators mostly share
(each misses a true label 15% of the time and adds a false one 0.5% of the time), one
frozenset object per record as the database would give them. No database, no Django.

It times, each the best of --repeat runs:
- encode: records DataFrame -> integer arrays + label bitmasks (annotation.agreement.stats.encode),
- report: the full report from the encoded arrays, without bootstrap (n_boot=0),
- report + bootstrap: the same with --boot resamples for the pair and group intervals,
- the scikit-learn loop on the same pair: 9 x cohen_kappa_score on the binary vectors + one
  cohen_kappa_score with the label set as category (vectors built beforehand, not timed),
and prints the ratios. It also checks that the report's kappas equal sklearn's to 1e-9.

Memory: the peak of traced allocations during one full report (tracemalloc, which numpy
reports its buffers to; run apart from the timings because tracing slows allocation), and
the process's peak resident set size at the end (ru_maxrss, includes the generated data
and the libraries)."""

from __future__ import annotations

import argparse
import resource
import secrets
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pg import pg_admin  # noqa: E402 (benchmarks/pg.py; a script's folder is on sys.path)

from annotation.agreement.stats import encode, report_from_encoded  # noqa: E402

CODES = [
    "ambiguous_instruction",
    "incomplete_instruction",
    "must_do_omission",
    "must_not_violation",
    "signature_mismatch",
    "cross_turn_inconsistency",
    "partial_functionality_breakdown",
    "code_rollback",
    "repetitive_response",
]
PREVALENCE = np.array([0.02, 0.025, 0.08, 0.015, 0.03, 0.035, 0.01, 0.005, 0.02])
MISS, FALSE_POSITIVE = 0.15, 0.005


def generate(n_cards: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.random((n_cards, len(CODES))) < PREVALENCE
    weights = 1 << np.arange(len(CODES))
    masks = []
    for _ in range(2):
        seen = truth & (rng.random(truth.shape) >= MISS)
        seen |= rng.random(truth.shape) < FALSE_POSITIVE
        masks.append(seen @ weights)
    code_tuples = [tuple(c for i, c in enumerate(CODES) if m >> i & 1) for m in range(1 << 9)]
    card = np.repeat(np.arange(n_cards), 2)
    mask = np.column_stack(masks).reshape(-1)
    labels = np.empty(len(mask), dtype=object)
    labels[:] = [frozenset(code_tuples[m]) for m in mask]
    records = pd.DataFrame(
        {
            "card": card,
            "annotator": np.tile(np.array(["alice", "bob"], dtype=object), n_cards),
            "group": "students",
            "labels": labels,
        }
    )
    return records, masks[0], masks[1]


def best_of(repeat: int, fn):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def sklearn_loop(vectors: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    from sklearn.metrics import cohen_kappa_score

    return [cohen_kappa_score(x, y) for x, y in vectors]


def compute_section(args: argparse.Namespace) -> None:
    records, mask_a, mask_b = generate(args.cards, args.seed)
    print(f"{args.cards:,} cards x 2 annotators x {len(CODES)} types = {len(records):,} records")

    t_encode, enc = best_of(args.repeat, lambda: encode(records, CODES))
    t_report, report = best_of(args.repeat, lambda: report_from_encoded(enc, n_boot=0))
    t_boot, boot_report = best_of(
        args.repeat, lambda: report_from_encoded(enc, n_boot=args.boot, seed=args.seed)
    )
    # binary vector per label, then the whole set (its bitmask) as one category
    vectors = [(mask_a >> i & 1, mask_b >> i & 1) for i in range(len(CODES))]
    vectors.append((mask_a, mask_b))
    t_sklearn, kappas = best_of(args.repeat, lambda: sklearn_loop(vectors))

    pair = report["pairs"]["alice|bob"]
    ours = [pair["per_label_kappa"][c] for c in CODES] + [pair["cohen_kappa"]]
    worst = max(abs(x - y) for x, y in zip(ours, kappas, strict=True))
    assert worst <= 1e-9, f"report differs from sklearn by {worst}"

    tracemalloc.start()
    report_from_encoded(enc, n_boot=args.boot, seed=args.seed)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"encode (DataFrame -> arrays)          {t_encode * 1000:9.1f} ms")
    print(f"report, no bootstrap                  {t_report * 1000:9.1f} ms")
    print(f"report + bootstrap ({args.boot} resamples)    {t_boot * 1000:9.1f} ms")
    print(f"sklearn loop (9 labels + set)         {t_sklearn * 1000:9.1f} ms")
    print(f"speed-up, report vs sklearn loop      {t_sklearn / t_report:9.1f} x")
    print(f"speed-up, encode + report vs sklearn  {t_sklearn / (t_encode + t_report):9.1f} x")
    print(f"max |report - sklearn| over the 10 kappas: {worst:.2e}")
    print(f"peak traced memory, report + bootstrap (tracemalloc): {traced_peak / 2**20:.1f} MiB")
    print(f"peak RSS of the process (ru_maxrss):                  {maxrss_mb:.1f} MiB")
    group = boot_report["groups"]["students"]
    print(f"group cohen_kappa {group['cohen_kappa']:.4f}, 95% CI {group['cohen_kappa_ci']}")

    return report


# ---------------------------------------------------------------------------------------
# The whole job and the export, from PostgreSQL rows (sections "job" and "export")
#
# The database `cardsort_bench_agree` is created on the server of --pg-url, filled with
# COPY (conversations of 5 turns, each assigned to the one group, the turns, 2 current
# round-1 annotations per card, their types in the M2M through table, a card state per
# card, and a unanimous consensus with its types on every card where the two label sets are
# identical), and dropped at the end (--keep-db keeps it; its comment records --cards and
# --seed for --reuse-db). The floor (_floor_step) copies the tables out with COPY into a
# C-level sink, so it is the database's and the driver's time alone; the job is timed as a
# worker runs it (run_agreement). Each timed step runs in a fresh subprocess; its memory is the
# growth of the subprocess's peak RSS during the step: the peak is reset to the current RSS
# when the step starts (after Django and the libraries are loaded) and read back as VmHWM,
# the high-water mark ru_maxrss reports. Not tracemalloc, which would slow the ORM down and
# miss the driver's buffers.

PG_DATABASE = "cardsort_bench_agree"
TURNS_PER_CONVERSATION = 5
COPY_ROWS = 500_000


def _copy(cursor, table: str, columns: str, frame: pd.DataFrame) -> None:
    """COPY a DataFrame in blocks of COPY_ROWS rows (COPY's text format: tab-separated, no
    value here holds a tab, newline, quote or backslash)."""
    import io

    for start in range(0, len(frame), COPY_ROWS):
        buffer = io.StringIO()
        frame.iloc[start : start + COPY_ROWS].to_csv(
            buffer, sep="\t", header=False, index=False, na_rep="\\N"
        )
        buffer.seek(0)
        cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN", buffer)


def _fill(n_cards: int, seed: int) -> dict:
    """Subprocess step: migrate, then load the study's rows with COPY."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Group, Study
    from taxonomy.models import Taxonomy

    call_command("migrate", verbosity=0)
    _, mask_a, mask_b = generate(n_cards, seed)
    version = Taxonomy.load_preset("interaction-smells")
    study = Study.objects.create(slug="bench", name="Bench", taxonomy_version=version)
    User = get_user_model()
    users = [User.objects.create(username=name) for name in ("alice", "bob")]
    group = Group.objects.create(study=study, name="students")
    group.annotators.set(users)
    type_id = version.types_by_code()
    type_ids = np.array([type_id[c].pk for c in CODES], dtype=np.int64)

    started = time.perf_counter()
    now = "2025-01-01 00:00:00+00"
    n_conv = -(-n_cards // TURNS_PER_CONVERSATION)
    conv_ids = np.arange(1, n_conv + 1)
    conversations = pd.DataFrame(
        {
            "id": conv_ids,
            "study_id": study.pk,
            "external_id": [f"c{i}" for i in conv_ids],
            "source_format": "native",
            "source_file": "bench.jsonl",
            "system_prompt": "",
            "preamble": "[]",
            "metadata": "{}",
            "n_turns": np.minimum(
                TURNS_PER_CONVERSATION, n_cards - (conv_ids - 1) * TURNS_PER_CONVERSATION
            ),
            "created_at": now,
        }
    )
    assignments = pd.DataFrame(
        {"id": conv_ids, "conversation_id": conv_ids, "group_id": group.pk, "created_at": now}
    )
    turn_ids = np.arange(1, n_cards + 1)
    turns = pd.DataFrame(
        {
            "id": turn_ids,
            "conversation_id": (turn_ids - 1) // TURNS_PER_CONVERSATION + 1,
            "index": (turn_ids - 1) % TURNS_PER_CONVERSATION + 1,
            "user_text": "please fix my function",
            "reply_text": "def f(x): return x",
            "reply_parts": "[]",
            "reply_empty": "f",
            "reply_missing": "f",
            "metadata": "{}",
        }
    )
    # annotation ids: alice's card i -> 2i - 1, bob's -> 2i
    masks = np.column_stack([mask_a, mask_b]).reshape(-1)
    annotation_ids = np.arange(1, 2 * n_cards + 1)
    annotations = pd.DataFrame(
        {
            "id": annotation_ids,
            "turn_id": np.repeat(turn_ids, 2),
            "annotator_id": np.tile([users[0].pk, users[1].pk], n_cards),
            "round": 1,
            "taxonomy_version_id": version.pk,
            "note": "",
            "evidence": "",
            "source": "import",
            "is_current": "t",
            "created_at": now,
        }
    )
    bits = (masks[:, None] >> np.arange(len(CODES))) & 1
    row, col = np.nonzero(bits)
    annotation_types = pd.DataFrame(
        {"annotation_id": annotation_ids[row], "type_id": type_ids[col]}
    )
    agreed = mask_a == mask_b
    states = pd.DataFrame(
        {
            "turn_id": turn_ids,
            "group_id": group.pk,
            "status": np.where(agreed, "agreed", "disputed"),
            "round": np.where(agreed, 1, 2),
            "updated_at": now,
        }
    )
    consensus_turns = turn_ids[agreed]
    consensus_ids = np.arange(1, len(consensus_turns) + 1)
    consensus = pd.DataFrame(
        {
            "id": consensus_ids,
            "turn_id": consensus_turns,
            "group_id": group.pk,
            "method": "unanimous",
            "decided_at": now,
            "from_round": 1,
            "taxonomy_version_id": version.pk,
            "rationale": "",
            "is_current": "t",
        }
    )
    cbits = (mask_a[agreed][:, None] >> np.arange(len(CODES))) & 1
    row, col = np.nonzero(cbits)
    consensus_types = pd.DataFrame({"consensus_id": consensus_ids[row], "type_id": type_ids[col]})
    tables = [
        ("annotation_conversation", conversations),
        ("annotation_assignment", assignments),
        ("annotation_turn", turns),
        ("annotation_annotation", annotations),
        (_types_table("Annotation"), annotation_types),
        ("annotation_cardstate", states),
        ("annotation_consensus", consensus),
        (_types_table("Consensus"), consensus_types),
    ]
    generated = time.perf_counter() - started
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        for table, frame in tables:
            columns = ", ".join(f'"{c}"' for c in frame.columns)
            _copy(cursor.cursor, table, columns, frame)
        for table, _ in tables:
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT coalesce(max(id), 1) FROM {table}))"
            )
    copied = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "study": study.slug,
        "generate_s": generated,
        "copy_s": copied,
        "rows": {table: len(frame) for table, frame in tables},
    }


def _types_table(model_name: str) -> str:
    """The M2M through table of a model's `types`."""
    from annotation import models

    return getattr(models, model_name).types.through._meta.db_table


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak() -> float:
    """Start a step's memory measurement: reset the process's peak RSS to its current RSS
    (Linux: /proc/self/clear_refs) and return that RSS. ru_maxrss cannot be used in the
    step's subprocess: Linux carries the parent's peak across fork + exec, so the parent's
    generated records would hide the step's own peak."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mib("VmRSS")


def _peak_growth(before: float) -> float:
    """Peak RSS since _reset_peak (VmHWM, the same high-water mark ru_maxrss reports for a
    process of its own), minus the RSS at the reset."""
    return _status_mib("VmHWM") - before


def _job_step(n_boot: int, seed: int, repeat: int) -> dict:
    """Subprocess step: the whole agreement job as a worker runs it (run_agreement: the Job
    row, its progress, the report, the result saved), best of `repeat` runs; then the same
    report through load_records + agreement_reports (frozensets, DataFrames), checked equal."""
    from annotation.agreement.data import compute_study_report, data_stamp, load_records
    from annotation.agreement.stats import agreement_reports
    from annotation.models import Job, JobKind, JobStatus, Study
    from annotation.tasks import run_agreement

    study = Study.objects.select_related("taxonomy_version__taxonomy").get(slug="bench")
    job_times, job_growth, job_before, result = [], 0.0, 0.0, None
    for i in range(repeat):
        job = Job.objects.create(
            study=study, kind=JobKind.AGREEMENT, params={"round": 1, "seed": seed, "n_boot": n_boot}
        )
        before = _reset_peak()
        started = time.perf_counter()
        run_agreement(job.pk)
        job_times.append(time.perf_counter() - started)
        if i == 0:
            job_growth, job_before = _peak_growth(before), before
        job.refresh_from_db()
        assert job.status == JobStatus.DONE, job.error
        result = job.result

    before = _reset_peak()
    started = time.perf_counter()
    data = load_records(study)
    loaded = time.perf_counter()
    reports = agreement_reports(data, n_boot=n_boot, seed=seed)
    done = time.perf_counter()
    growth = _peak_growth(before)
    records = len(data["smell"][0])
    del data
    started_stamp = time.perf_counter()
    data_stamp(study)
    stamp_s = time.perf_counter() - started_stamp
    before_full = _reset_peak()
    started_full = time.perf_counter()
    full = compute_study_report(study, n_boot=n_boot, seed=seed)
    full_s = time.perf_counter() - started_full
    growth_full = _peak_growth(before_full)
    pair = reports["smell"]["pairs"]["alice|bob"]
    assert full["axes"]["smell"]["report"] == reports["smell"]
    assert result["axes"]["smell"]["report"] == reports["smell"]
    return {
        "records": records,
        "job_s": job_times,
        "job_rss_delta_mib": job_growth,
        "job_rss_before_mib": job_before,
        "load_s": loaded - started,
        "report_s": done - loaded,
        "rss_delta_mib": growth,
        "rss_before_mib": before,
        "stamp_s": stamp_s,
        "compute_study_report_s": full_s,
        "rss_delta_full_mib": growth_full,
        "kappa": pair["cohen_kappa"],
        "per_label_kappa": [pair["per_label_kappa"][c] for c in CODES],
    }


def _floor_tables() -> dict[str, list[str]]:
    """The tables each step reads (every one of them is the bench study's alone).
    job: annotation.agreement.rows's queries and the names of users, groups and types.
    export: annotation.exports.gold_rows and label_columns."""
    from django.contrib.auth import get_user_model

    from annotation import models
    from taxonomy.models import Taxonomy, TaxonomyVersion, Type

    def table(model) -> str:
        return model._meta.db_table

    shared = [
        models.Annotation,
        models.Annotation.types.through,
        models.Turn,
        models.Conversation,
        models.Consensus,
        models.Consensus.types.through,
        models.Assignment,
        models.Group,
        models.Group.annotators.through,
        models.Group.judges.through,
        models.StudyGold,
        models.StudyGold.types.through,
        get_user_model(),
        Type,
    ]
    export = shared + [models.CardState, TaxonomyVersion, Taxonomy]
    return {"job": [table(m) for m in shared], "export": [table(m) for m in export]}


def _floor_step(repeat: int) -> dict:
    """Subprocess step: PostgreSQL's floor for each step, the time COPY ... TO STDOUT takes
    to hand over every row of the tables the step reads (whole rows, text format) to this
    process, which drops them: best of `repeat` passes over the tables."""
    import io
    import os

    from django.db import connection

    out = {}
    with connection.cursor() as cursor:
        for step, tables in _floor_tables().items():
            passes = []
            for _ in range(repeat):
                started = time.perf_counter()
                # a C-level sink: psycopg2 writes a row at a time
                with open(os.devnull, "wb", buffering=io.DEFAULT_BUFFER_SIZE * 128) as sink:
                    for table in tables:
                        cursor.cursor.copy_expert(f'COPY "{table}" TO STDOUT', sink)
                passes.append(time.perf_counter() - started)
            cursor.execute(
                " + ".join(f'(SELECT count(*) FROM "{t}")' for t in tables).join(("SELECT ", ""))
            )
            out[step] = {"seconds": min(passes), "passes": passes, "rows": cursor.fetchone()[0]}
    return out


def _export_step(fmt: str, out: str, repeat: int) -> dict:
    """Subprocess step: the gold export of the study (write_gold), as the export job runs
    it, best of `repeat` runs; the memory of the first."""
    from annotation.exports import write_gold
    from annotation.models import Study

    study = Study.objects.get(slug="bench")
    times, growth, rss_before, n = [], 0.0, 0.0, 0
    for i in range(repeat):
        before = _reset_peak()
        started = time.perf_counter()
        n = write_gold(study, out, fmt)
        times.append(time.perf_counter() - started)
        if i == 0:
            growth, rss_before = _peak_growth(before), before
    return {
        "rows": n,
        "seconds": min(times),
        "times": times,
        "bytes": Path(out).stat().st_size,
        "rss_delta_mib": growth,
        "rss_before_mib": rss_before,
    }


def _step(args: argparse.Namespace) -> None:
    """The body of a subprocess: Django on the bench database, one step, JSON on stdout."""
    import json

    import django

    django.setup()
    if args.step == "fill":
        result = _fill(args.cards, args.seed)
    elif args.step == "floor":
        result = _floor_step(args.floor_repeat)
    elif args.step == "job":
        result = _job_step(args.job_boot, args.seed, args.db_repeat)
    else:
        result = _export_step("parquet", args.out, args.db_repeat)
    print("RESULT " + json.dumps(result))


def _run_step(args: argparse.Namespace, step: str, tmp: Path, **extra: str) -> dict:
    import json
    import os
    import subprocess

    env = dict(
        os.environ,
        DATABASE_URL=f"{args.pg_url}/{PG_DATABASE}",
        CARDSORT_DATA_DIR=str(tmp / "data"),
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
    )
    command = [sys.executable, __file__, "--step", step, "--cards", str(args.cards)]
    command += ["--seed", str(args.seed), "--job-boot", str(args.job_boot)]
    command += ["--db-repeat", str(args.db_repeat), "--floor-repeat", str(args.floor_repeat)]
    for key, value in extra.items():
        command += [f"--{key}", value]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"step {step} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def _filled_marker(args: argparse.Namespace) -> str:
    return f"agreement_bench cards={args.cards} seed={args.seed}"


def _reusable(args: argparse.Namespace) -> bool:
    """--reuse-db: the database is there, filled by this bench with the same cards and seed
    (its comment says so)."""
    import psycopg2

    try:
        conn = psycopg2.connect(f"{args.pg_url}/{PG_DATABASE}")
    except psycopg2.OperationalError:
        return False
    with conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
            "WHERE datname = current_database()"
        )
        comment = cursor.fetchone()[0]
    conn.close()
    return comment == _filled_marker(args)


def _ratio_line(what: str, seconds: float, floor: float, aim: float) -> str:
    ratio = seconds / floor
    verdict = "within" if ratio <= aim else "ABOVE"
    return (
        f"{what:<24}{seconds:8.2f} s   floor {floor:6.2f} s   ratio {ratio:5.2f} x "
        f"({verdict} the aim of {aim:g} x)"
    )


def database_sections(args: argparse.Namespace, pure_report: dict | None) -> None:
    import tempfile

    sections = set(args.sections.split(","))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        reuse = args.reuse_db and _reusable(args)
        try:
            if reuse:
                print(f"\nPostgreSQL database {PG_DATABASE}: reused ({_filled_marker(args)})")
            else:
                pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")
                pg_admin(args.pg_url, f"CREATE DATABASE {PG_DATABASE}")
                fill = _run_step(args, "fill", tmp)
                pg_admin(
                    args.pg_url, f"COMMENT ON DATABASE {PG_DATABASE} IS '{_filled_marker(args)}'"
                )
                rows = ", ".join(f"{table} {n:,}" for table, n in fill["rows"].items())
                print(f"\nPostgreSQL database {PG_DATABASE}: {rows}")
                print(
                    f"generate {fill['generate_s']:.1f} s, COPY {fill['copy_s']:.1f} s "
                    "(not part of the timings below)"
                )
            floor = _run_step(args, "floor", tmp)
            print(
                "\nPostgreSQL's floor: COPY ... TO STDOUT of every row of the tables a step "
                f"reads, best of {args.floor_repeat}:"
            )
            for step in ("job", "export"):
                passes = ", ".join(f"{t:.2f}" for t in floor[step]["passes"])
                print(
                    f"{step:<8}{floor[step]['seconds']:6.2f} s  ({floor[step]['rows']:,} rows; "
                    f"passes {passes} s)"
                )
            ratios = []
            if "job" in sections:
                job = _run_step(args, "job", tmp)
                best = min(job["job_s"])
                runs = ", ".join(f"{t:.2f}" for t in job["job_s"])
                print(f"\nWhole agreement job from PostgreSQL ({job['records']:,} records):")
                print(
                    f"run_agreement ({args.job_boot} resamples)     {best:9.2f} s "
                    f"(best of {len(job['job_s'])}: {runs} s)"
                )
                print(
                    f"peak RSS growth, the job (VmHWM after a reset, own process): "
                    f"{job['job_rss_delta_mib']:.0f} MiB over {job['job_rss_before_mib']:.0f} MiB"
                )
                print(f"load_records (SQL -> DataFrame)        {job['load_s']:9.2f} s")
                print(
                    f"agreement_reports ({args.job_boot} resamples)      {job['report_s']:9.2f} s"
                )
                total = job["load_s"] + job["report_s"]
                print(f"load_records + agreement_reports      {total:9.2f} s")
                print(
                    f"compute_study_report (+ stamp, extras) {job['compute_study_report_s']:8.2f} s"
                )
                print(f"data_stamp (staleness check)          {job['stamp_s'] * 1000:9.1f} ms")
                print(
                    f"peak RSS growth, load + report (VmHWM after a reset, own process): "
                    f"{job['rss_delta_mib']:.0f} MiB over {job['rss_before_mib']:.0f} MiB"
                )
                print(
                    f"peak RSS growth, with compute_study_report too:                     "
                    f"{job['rss_delta_full_mib']:.0f} MiB"
                )
                if pure_report is not None:
                    pair = pure_report["pairs"]["alice|bob"]
                    ours = [pair["per_label_kappa"][c] for c in CODES] + [pair["cohen_kappa"]]
                    theirs = job["per_label_kappa"] + [job["kappa"]]
                    worst = max(abs(x - y) for x, y in zip(ours, theirs, strict=True))
                    print(f"max |DB report - in-memory report| over the 10 kappas: {worst:.2e}")
                ratios.append(_ratio_line("agreement job", best, floor["job"]["seconds"], 3))
            if "export" in sections:
                out = tmp / "bench-gold.parquet"
                export = _run_step(args, "export", tmp, out=str(out))
                runs = ", ".join(f"{t:.2f}" for t in export["times"])
                print(f"\nGold export to Parquet (write_gold), {export['rows']:,} cards:")
                print(
                    f"write_gold parquet                    {export['seconds']:9.2f} s "
                    f"({export['rows'] / export['seconds']:,.0f} cards/s, "
                    f"{export['bytes'] / 2**20:.1f} MiB file; best of {len(export['times'])}: "
                    f"{runs} s)"
                )
                print(
                    f"peak RSS growth (VmHWM after a reset, own process): "
                    f"{export['rss_delta_mib']:.0f} MiB over {export['rss_before_mib']:.0f} MiB"
                )
                ratios.append(
                    _ratio_line("gold export", export["seconds"], floor["export"]["seconds"], 5)
                )
            if ratios:
                print(f"\nAgainst PostgreSQL's floor ({args.cards:,} cards, issue 8's aims):")
                print("\n".join(ratios))
        finally:
            if not args.keep_db and not args.reuse_db:
                pg_admin(args.pg_url, f"DROP DATABASE IF EXISTS {PG_DATABASE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=1_000_000)
    parser.add_argument("--boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--sections",
        default="compute,job,export",
        help="comma-separated: compute (no database), job, export (PostgreSQL)",
    )
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument(
        "--job-boot", type=int, default=1000, help="bootstrap resamples of the job (default 1000)"
    )
    parser.add_argument(
        "--db-repeat", type=int, default=2, help="runs of the job and the export (best taken)"
    )
    parser.add_argument(
        "--floor-repeat", type=int, default=3, help="passes of the COPY floor (best taken)"
    )
    parser.add_argument("--keep-db", action="store_true", help=f"keep {PG_DATABASE} afterwards")
    parser.add_argument(
        "--reuse-db",
        action="store_true",
        help=f"use {PG_DATABASE} as an earlier run with the same --cards and --seed left it "
        "(filled otherwise), and keep it",
    )
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        _step(args)
        return
    sections = set(args.sections.split(","))
    pure_report = compute_section(args) if "compute" in sections else None
    if sections & {"job", "export"}:
        database_sections(args, pure_report)


if __name__ == "__main__":
    main()
