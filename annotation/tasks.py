"""Celery tasks: thin. They load a Job by id and call the domain code, which is imported
inside the task so a worker starts without loading every importer up front.

Every task refuses a job that already ended (acks_late redelivers a message whose worker
died; the job may have been reaped as lost, or finished, meanwhile), and keeps the job's
heartbeat fresh while it runs, so `Job.objects.reap_lost` can tell a killed worker's job
from a slow one.

Tests only: CARDSORT_TEST_EXPORT_DELAY (seconds, float) makes `run_export` sleep that long
after each row, so an integration test can kill the worker in the middle of an export."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, connection

from .csv_cells import neutralise
from .uploads import job_ended

logger = logging.getLogger(__name__)

# Progress is written at most this often: a per-record UPDATE would slow a large import
# down and lock SQLite for the web process.
PROGRESS_EVERY_SECONDS = 0.5


def _heartbeat_seconds() -> float:
    # several beats fit in the lost threshold, so one slow UPDATE never gets a job reaped
    return max(1.0, min(15.0, settings.JOB_LOST_SECONDS / 4))


@contextmanager
def _heartbeat(job, request) -> Iterator[None]:
    """Beat from a thread while the task runs: one step of a job (the agreement statistics
    of an axis) can take longer than the lost threshold without any progress to report.
    A killed worker takes the thread with it, which is the point. Not in eager mode or a
    direct call: there is no worker to lose, and a second SQLite writer would only wait."""
    if request.called_directly or request.is_eager:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(_heartbeat_seconds()):
                try:
                    job.beat()
                except Exception:
                    logger.exception("job %s: heartbeat failed", job.pk)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"job-{job.pk}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class _Throttled:
    """progress(done, total, message) written at most every PROGRESS_EVERY_SECONDS, and
    always at the end."""

    def __init__(self, job) -> None:
        self.job, self.last = job, 0.0

    def __call__(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_EVERY_SECONDS:
            return
        self.last = now
        self.job.set_progress(done, message, total=total)


# How long a task keeps trying to record its job's failure when the database itself went
# away (a restart): after that the job is left to Job.objects.reap_lost.
DB_RETRY_SECONDS = 30


def _record_failure(record) -> None:
    """Call `record()`, which writes a job's failure, even when what failed was the database
    connection: a restarted server leaves the worker a broken connection (Django reconnects
    between requests, never inside a task), so an unusable one is dropped and opened afresh,
    and a server still starting is waited for, up to DB_RETRY_SECONDS."""
    if connection.in_atomic_block:  # an eager run inside a transaction: no reconnecting
        record()
        return
    deadline = time.monotonic() + DB_RETRY_SECONDS
    while True:
        if connection.connection is not None and not connection.is_usable():
            connection.close()
        try:
            record()
            return
        except DatabaseError:
            if time.monotonic() > deadline:
                raise
            logger.warning("could not record a job's failure yet; the database is away")
            time.sleep(1)


@worker_ready.connect
def reap_lost_jobs_on_startup(**kwargs) -> None:
    """A worker starting up may be the replacement of one that was killed: fail the jobs
    left running with no heartbeat, so their pages stop saying "running"."""

    try:
        reaped = reap_lost_jobs()
    except Exception:
        # e.g. migrations not applied yet: the worker must still start
        logger.exception("could not reap lost jobs at worker startup")
        return
    if reaped:
        logger.warning("marked %s lost job(s) failed at worker startup", reaped)


def reap_lost_jobs(older_than: float | None = None) -> int:
    """Job.objects.reap_lost, with a lost conversation import or splitting job queued
    again to resume."""
    from .models import Job, JobKind

    def resume(job) -> None:
        (run_split_proposals if job.kind == JobKind.SPLIT else run_import).delay(job.pk)

    return Job.objects.reap_lost(older_than, resume=resume)


def _load_job(job_id: int, what: str):
    """The job, or None for a job that already ended (a redelivered message)."""
    from .models import Job

    job = Job.objects.select_related("study__taxonomy_version__taxonomy").get(pk=job_id)
    if job.is_finished:
        logger.warning("%s job %s is already %s; not running it again", what, job.pk, job.status)
        return None
    return job


@shared_task(bind=True)
def run_import(self, job_id: int) -> None:
    """params: format, files [{path, name}] -> job.result = ImportReport.as_dict(), the full
    list of rejected records in MEDIA_ROOT/imports/<job id>/rejected.txt (result_file), with
    the files not read and the warnings apart (write_rejected).

    Every conversation written carries this job and stays invisible until the job is done.
    A job left running by a lost worker (a redelivered message) or queued again by
    Job.objects.reap_lost is resumed: the re-run skips by fingerprint what the earlier run
    wrote and continues. A job that fails has what it wrote removed."""
    from .importers import import_files
    from .models import Job

    job = Job.objects.select_related("study").get(pk=job_id)
    if job.is_finished:
        # A redelivered message (acks_late) for a job that already ended: nothing to do.
        logger.warning("import job %s is already %s; not running it again", job.pk, job.status)
        return
    if not job.claim_run():
        logger.warning("import job %s was claimed by another worker", job.pk)
        return
    if job.params["runs"] > 1:
        runs = job.params["runs"]
        logger.warning("import job %s: run %s, resuming what an earlier run wrote", job.pk, runs)
    # Uploads are stored relative to MEDIA_ROOT, so web and worker may mount it anywhere.
    media = Path(settings.MEDIA_ROOT)
    paths = [media / f["path"] for f in job.params["files"]]
    names = {str(media / f["path"]): f["name"] for f in job.params["files"]}
    folder = job.params.get("folder")
    if folder:  # a folder chosen on the import page: its files of no known format are skipped
        paths.append(media / folder["path"])
        names.update({str(media / f["path"]): f["name"] for f in folder["files"]})
    job.start(total=0)
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if done < total and now - last_write < PROGRESS_EVERY_SECONDS:
            return
        last_write = now
        job.set_progress(done, total=total)

    keep, dry_run = None, bool(job.params.get("dry_run"))
    try:
        if job.params.get("filter") == "coding":
            from .intake.coding_filter import rules_for
            from .intake.coding_report import CodingFilter

            keep = CodingFilter(rules_for(job.study))
        with _heartbeat(job, self.request):
            report = import_files(
                job.study,
                paths,
                fmt=job.params["format"],
                progress=progress,
                display_names=names,
                keep=keep,
                dry_run=dry_run,
                job=job,
            )
            rejected = write_rejected(job, report.errors, report.listed_apart())
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        reason = _failure(exc)

        def record() -> None:
            removed = job.remove_partial_import()
            error = reason
            if removed:
                error += f" (the {removed} conversations it had written were removed)"
            job.fail(error)

        _record_failure(record)
        return
    result = report.as_dict()
    if keep is not None:
        result["filter"] = keep.result()
    if report.conversations == 0 and report.already_imported == 0 and not dry_run:
        error = f"Nothing could be imported. {report.summary_line()}"
        job.fail(error, result=result, result_file=rejected)
    else:
        job.finish(result, result_file=rejected)
        job_ended(job)  # its uploads removed, or kept CARDSORT_UPLOAD_KEEP_DAYS


REJECTED_FILE = "rejected.txt"


def write_rejected(job, errors: list[str], apart: list[tuple[str, list[str]]] = ()) -> str:
    """Every rejected record of an import, one `file:line: reason` line each
    (`file[index] (id=...): reason` in a JSON array): exactly the records its summary counts
    as rejected, where the job's result keeps only the first ImportReport's MAX_REPORTED.
    Then each list of `apart` (ImportReport.listed_apart: files not read, warnings) after a
    blank line and a `# heading` line, so the rejected records are the lines before the
    first blank one. Returns its path relative to MEDIA_ROOT, or "" when there is nothing
    to list. A spreadsheet opens a .txt as one cell a line: a line that begins like a
    formula (a file named "=cmd...") is neutralised as a CSV cell is."""
    if not errors and not any(lines for _, lines in apart):
        return ""
    relative = Path("imports", str(job.pk), REJECTED_FILE)
    path = Path(settings.MEDIA_ROOT) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for line in errors:
            out.write(neutralise(line.replace("\n", " ")) + "\n")
        for heading, lines in apart:
            if lines:
                out.write(f"\n# {heading}\n")
                for line in lines:
                    out.write(neutralise(line.replace("\n", " ")) + "\n")
    return str(relative)


def _failure(exc: Exception) -> str:
    from .intake.coding_filter import RulesError

    if isinstance(exc, RulesError):
        return f"The study's coding rules cannot be used: {exc}"
    return f"{type(exc).__name__}: {exc}"


@shared_task(bind=True)
def run_filter_study(self, job_id: int) -> None:
    """params: filter ("coding"), apply -> job.result = {"filter": the coding filter's
    report over the study's current conversations, with what it set aside (or, a dry run,
    would)}. A dry run reads only; a real run sets aside in one transaction at its end, and a
    rerun finds the dropped ones already aside (never read again)."""
    from .intake.coding_filter import rules_for
    from .intake.coding_report import filter_study

    job = _load_job(job_id, "coding filter")
    if job is None:
        return
    job.start(total=0)
    throttled = _Throttled(job)
    try:
        with _heartbeat(job, self.request):
            report = filter_study(
                job.study,
                rules_for(job.study),
                apply=bool(job.params.get("apply")),
                progress=lambda done, total: throttled(done, total, "conversations"),
            )
    except Exception as exc:
        logger.exception("coding filter %s failed", job.pk)
        error = _failure(exc)
        _record_failure(lambda: job.fail(error))
        return
    job.total = job.progress = report["scanned"]
    job.save(update_fields=["total", "progress"])
    job.finish(result={"filter": report})


ERRORS_SHOWN = 200


@shared_task(bind=True)
def run_label_import(self, job_id: int) -> None:
    """params: files [{path, name}] (one JSONL of annotations), create_members, judge ->
    job.result = {imported, rejected, errors (the first ERRORS_SHOWN lines), ...}. Batches
    commit as they go; running a lost job again re-imports its file, and a label already
    there is the same revision again (Annotation.same_as), never a duplicate."""
    from .importers.annotations import import_annotations

    job = _load_job(job_id, "label import")
    if job is None:
        return
    media = Path(settings.MEDIA_ROOT)
    upload = job.params["files"][0]
    job.start(total=0)
    throttled = _Throttled(job)
    try:
        with _heartbeat(job, self.request):
            report = import_annotations(
                job.study,
                media / upload["path"],
                create_members=bool(job.params.get("create_members")),
                judge=bool(job.params.get("judge")),
                progress=lambda done, total: throttled(done, total, "records"),
            )
    except Exception as exc:
        logger.exception("label import job %s failed", job.pk)
        error = f"{type(exc).__name__}: {exc}"
        _record_failure(lambda: job.fail(error))
        return
    # the lead's file name in the error lines, not our stored copy's
    errors = [
        line.replace(str(media / upload["path"]), upload["name"], 1)
        for line in report.rejected[:ERRORS_SHOWN]
    ]
    result = {
        "imported": report.imported,
        "rejected": len(report.rejected),
        "errors": errors,
        "errors_not_shown": max(0, len(report.rejected) - ERRORS_SHOWN),
        # an import that landed nothing removed what it had created (the summary says so)
        "created_users": [] if report.removed else report.created_users,
        "created_groups": [] if report.removed else report.created_groups,
        "assigned_conversations": 0 if report.removed else report.assigned_conversations,
        "summary": report.summary(),
    }
    if report.imported == 0:
        job.fail(f"Nothing could be imported. {report.summary()}", result=result)
    else:
        job.finish(result)
        job_ended(job)


@shared_task(bind=True)
def run_agreement(self, job_id: int) -> None:
    """params: round, seed, n_boot, version (a taxonomy version id; default the study's),
    dev_share (a scored judge's development split, default 0.3)
    -> job.result = compute_study_report(...)."""
    from taxonomy.models import TaxonomyVersion

    from .agreement.data import compute_study_report
    from .agreement.judge_data import DEV_SHARE

    job = _load_job(job_id, "agreement")
    if job is None:
        return
    params = job.params
    job.start(total=1)
    try:
        with _heartbeat(job, self.request):
            version = params.get("version")
            result = compute_study_report(
                job.study,
                version=TaxonomyVersion.objects.get(pk=version) if version else None,
                round=int(params.get("round", 1)),
                n_boot=int(params.get("n_boot", 1000)),
                seed=int(params.get("seed", 0)),
                dev_share=float(params.get("dev_share", DEV_SHARE)),
                progress=_Throttled(job),
            )
    except Exception as exc:
        logger.exception("agreement job %s failed", job.pk)
        error = f"{type(exc).__name__}: {exc}"
        _record_failure(lambda: job.fail(error))
        return
    job.finish(result=result)


def export_filename(study_slug: str, raw: bool, fmt: str) -> str:
    return f"{study_slug}-{'raw' if raw else 'gold'}.{fmt}"


@shared_task(bind=True)
def run_export(self, job_id: int) -> None:
    """params: format (csv|jsonl|parquet), raw (bool), round, with_text (bool) -> the file
    MEDIA_ROOT/exports/<job id>/<study>-gold.<format> (or -raw), its path relative to
    MEDIA_ROOT in job.result_file. The export writes a temporary *.part file and renames it
    when complete, so a killed worker never leaves a file that looks finished. The file is
    made blind for whoever started the job (job.created_by; result blind_for, blind_for_id):
    if they annotate, their fellow annotators' labels on open cards stay out of it."""
    from .exports import write_gold, write_raw
    from .models import Annotation, Turn

    job = _load_job(job_id, "export")
    if job is None:
        return
    study, params = job.study, job.params
    fmt, raw = params.get("format", "csv"), bool(params.get("raw", False))
    round = params.get("round")
    with_text, reader = bool(params.get("with_text", False)), job.created_by
    folder = job.export_dir
    folder.mkdir(parents=True, exist_ok=True)
    job.discard_partial_output()  # a lost earlier run's temporary file
    if raw:
        rows = Annotation.objects.filter(turn__conversation__study=study)
        if round is not None:
            rows = rows.filter(round=round)
    else:
        # one gold row per card and group (the join repeats a card for each of its groups)
        rows = Turn.objects.filter(
            conversation__study=study, conversation__assignments__isnull=False
        )
    total = rows.count()
    job.start(total=total)
    path = folder / export_filename(study.slug, raw, fmt)
    throttled = _Throttled(job)
    delay = float(os.environ.get("CARDSORT_TEST_EXPORT_DELAY", 0) or 0)

    def progress(n: int) -> None:
        throttled(n, total, "rows written")
        if delay:
            time.sleep(delay)

    try:
        with _heartbeat(job, self.request):
            options = {"progress": progress, "with_text": with_text, "blind_for": reader}
            if raw:
                n = write_raw(study, path, fmt, round=round, **options)
            else:
                n = write_gold(study, path, fmt, round=round or 1, **options)
    except Exception as exc:
        logger.exception("export job %s failed", job.pk)
        error = f"{type(exc).__name__}: {exc}"
        _record_failure(lambda: job.fail(error))
        return
    job.total = n
    relative = path.relative_to(Path(settings.MEDIA_ROOT))
    result = {"rows": n, "format": fmt, "raw": raw, "round": round, "file": path.name}
    result["with_text"] = with_text
    result["blind_for"] = reader.username if reader is not None else None
    result["blind_for_id"] = reader.pk if reader is not None else None
    job.finish(result=result, result_file=str(relative))


@shared_task(bind=True)
def run_split_proposals(self, job_id: int) -> None:
    """A splitting job (intake/split_run.py: params and result): asks the model about the
    chosen conversations or the study's, applies the open proposals if asked. Claimed like
    an import, so a lost job queued again (Job.resumable) resumes where it stopped."""
    from .intake.split_run import execute

    job = _load_job(job_id, "splitting")
    if job is None or not job.claim_run():
        return
    job.start(total=job.total)
    throttled = _Throttled(job)
    try:
        with _heartbeat(job, self.request):
            execute(job, throttled)
    except Exception as exc:
        logger.exception("splitting job %s failed", job.pk)
        error = f"{type(exc).__name__}: {exc}"
        _record_failure(lambda: job.fail(error))


@shared_task(bind=True)
def run_judge(self, job_id: int) -> None:
    """A machine judge's run (params: run, a JudgeRun id; actions/judges.py): its cards
    still to score, scored and labelled; the job's result the run's counts. A lost job
    fails; running the same judge again resumes its run where it stopped."""
    from .actions.judges import execute_job

    job = _load_job(job_id, "judge")
    if job is None or not job.claim_run():
        return
    job.start(total=job.total)
    throttled = _Throttled(job)
    try:
        with _heartbeat(job, self.request):
            execute_job(job, throttled)
    except Exception as exc:
        logger.exception("judge job %s failed", job.pk)
        error = f"{type(exc).__name__}: {exc}"
        _record_failure(lambda: job.fail(error))
