"""Celery tasks: one skeleton, and a runner per job kind.

`job_task` makes a kind's task. The skeleton (`execute`) loads the Job by id (the domain
code is imported inside the runners, so a worker starts without loading every importer up
front), refuses a job that already ended (acks_late redelivers a message whose worker died;
the job may have been reaped as lost, or finished, meanwhile), claims it for a run when the
kind resumes lost jobs (Job.claim_run), starts it, keeps its heartbeat fresh while it runs
(so `Job.objects.reap_lost` can tell a killed worker's job from a slow one), hands the
kind's `run(job, progress)` a throttled progress, and records how it ended: the Outcome the
kind returns (done, or failed with its result), or, on an exception, the failure with what
the job had half-written removed (Job.discard_partial_output), even when what failed was the
database connection.

A kind's files go through Django's storage (annotation/storage.py): a writer that needs a
local file writes it in a scratch folder that the skeleton removes however the run ends, then
stores it; a reader that needs one gets a local copy."""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, connection

from . import storage
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
def heartbeat(job, beating: bool = True) -> Iterator[None]:
    """Beat from a thread while the block runs: one step of a job (the agreement statistics
    of an axis) can take longer than the lost threshold without any progress to report.
    A killed worker takes the thread with it, which is the point. Not `beating` (a test's
    transaction, an eager run), nothing: a second SQLite writer would only wait. A
    management command running a job in its own process beats with it too."""
    if not beating:
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


def _heartbeat(job, request):
    """The task's heartbeat; none in eager mode or a direct call: no worker to lose."""
    return heartbeat(job, not (request.called_directly or request.is_eager))


class _Throttled:
    """progress(done, total[, message]) written at most every PROGRESS_EVERY_SECONDS, and
    always at the end; the message defaults to the kind's unit ("records", "rows written")."""

    def __init__(self, job, unit: str = "") -> None:
        self.job, self.unit, self.last = job, unit, 0.0

    def __call__(self, done: int, total: int, message: str | None = None) -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_EVERY_SECONDS:
            return
        self.last = now
        self.job.set_progress(done, self.unit if message is None else message, total=total)


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


# -- the skeleton ----------------------------------------------------------------------------


@dataclass
class Outcome:
    """How a kind's run ended when it did not raise: done with `result` (and `file`, a stored
    name for Job.result_file), or failed with `error` and still its result to show."""

    result: dict = field(default_factory=dict)
    file: str = ""
    error: str = ""


class JobRun:
    """One job kind's work: `run(job, progress)` does it and returns an Outcome (or None when
    it ended the job itself, as the splitting job does). `progress(done, total[, message])` is
    throttled; `self.scratch` is a local folder of its own, removed however the run ends."""

    task = ""  # the Celery task's name in this module (job_task), as the broker's messages say
    what = "job"  # in log lines
    unit = ""  # the progress message
    claims = False  # counted runs (Job.claim_run): a lost job of the kind is resumed
    uploads = False  # the job's uploads go (uploads.job_ended) once it has succeeded

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch

    def run(self, job, progress) -> Outcome | None:
        raise NotImplementedError


def _load_job(job_id: int, what: str):
    """The job, or None for a job that already ended (a redelivered message)."""
    from .models import Job

    job = Job.objects.select_related("study__taxonomy_version__taxonomy").get(pk=job_id)
    if job.is_finished:
        logger.warning("%s job %s is already %s; not running it again", what, job.pk, job.status)
        return None
    return job


def execute(kind: type[JobRun], request, job_id: int) -> None:
    """Run the job `job_id` as `kind` says: see the module docstring."""
    job = _load_job(job_id, kind.what)
    if job is None:
        return
    if kind.claims and not job.claim_run():
        logger.warning("%s job %s was claimed by another worker", kind.what, job.pk)
        return
    job.start(total=job.total)
    # beside the uploads' temporary files (FILE_UPLOAD_TEMP_DIR; default the system's)
    folder = getattr(settings, "FILE_UPLOAD_TEMP_DIR", None)
    scratch = Path(tempfile.mkdtemp(prefix=f"cardsort-job-{job.pk}-", dir=folder))
    try:
        with _heartbeat(job, request):
            outcome = kind(scratch).run(job, _Throttled(job, kind.unit))
    except Exception as exc:
        logger.exception("%s job %s failed", kind.what, job.pk)
        reason = _failure(exc)

        def record() -> None:
            removed = job.discard_partial_output()
            error = reason
            if removed:
                error += f" (the {removed} conversations it had written were removed)"
            job.fail(error)

        _record_failure(record)
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if outcome is None:
        return
    if outcome.error:
        job.fail(outcome.error, result=outcome.result, result_file=outcome.file)
        return
    job.finish(outcome.result, result_file=outcome.file)
    if kind.uploads:
        job_ended(job)  # its uploads removed, or kept CARDSORT_UPLOAD_KEEP_DAYS


def job_task(kind: type[JobRun]):
    """The Celery task of `kind` (named after its function, as the messages in a broker
    name it): the skeleton around the kind's run."""

    def task(self, job_id: int) -> None:
        execute(kind, self.request, job_id)

    task.__name__ = task.__qualname__ = kind.task
    task.__doc__ = kind.__doc__
    task.__module__ = __name__
    return shared_task(bind=True, name=f"{__name__}.{kind.task}")(task)


def _failure(exc: Exception) -> str:
    from .intake.coding_filter import RulesError

    if isinstance(exc, RulesError):
        return f"The study's coding rules cannot be used: {exc}"
    return f"{type(exc).__name__}: {exc}"


# -- the kinds -------------------------------------------------------------------------------


@contextmanager
def _local_uploads(job, scratch: Path) -> Iterator[tuple[list[Path], dict[str, str]]]:
    """The job's stored uploads as local paths (its files, then a chosen folder), with the
    name the lead gave each (by local path: the importers' messages name that)."""
    with ExitStack() as stack:
        paths, names = [], {}
        for f in job.params.get("files", []):
            path = stack.enter_context(storage.local_copy(f["path"], scratch))
            paths.append(path)
            names[str(path)] = f["name"]
        folder = job.params.get("folder")
        if folder:  # a folder chosen on the import page: its files of no known format skipped
            root = stack.enter_context(storage.local_folder(folder["path"], scratch))
            paths.append(root)
            for f in folder["files"]:
                inside = PurePosixPath(f["path"]).relative_to(folder["path"])
                names[str(root.joinpath(*inside.parts))] = f["name"]
        yield paths, names


class ImportRun(JobRun):
    """params: format, files [{path, name}] (stored names), folder, filter, dry_run ->
    job.result = ImportReport.as_dict(), the full list of rejected records in the stored
    imports/<job id>/rejected.txt (result_file), with the files not read and the warnings
    apart (write_rejected).

    Every conversation written carries this job and stays invisible until the job is done.
    A job left running by a lost worker (a redelivered message) or queued again by
    Job.objects.reap_lost is resumed: the re-run skips by fingerprint what the earlier run
    wrote and continues. A job that fails has what it wrote removed."""

    task, what, claims, uploads = "run_import", "import", True, True

    def run(self, job, progress) -> Outcome:
        from .importers import import_files, modality

        if job.params["runs"] > 1:
            runs = job.params["runs"]
            logger.warning(
                "import job %s: run %s, resuming what an earlier run wrote", job.pk, runs
            )
        keep, dry_run = None, bool(job.params.get("dry_run"))
        if job.params.get("filter") == "coding":
            from .intake.coding_filter import rules_for
            from .intake.coding_report import CodingFilter

            keep = CodingFilter(rules_for(job.study))
        with _local_uploads(job, self.scratch) as (paths, names):
            report = import_files(
                job.study,
                paths,
                fmt=job.params["format"],
                progress=progress,
                display_names=names,
                keep=keep,
                dry_run=dry_run,
                job=job,
                metadata=modality.overrides(job.params.get("modality"), job.params.get("tool")),
            )
        rejected = write_rejected(job, report.errors, report.listed_apart())
        result = report.as_dict()
        if keep is not None:
            result["filter"] = keep.result()
        if report.conversations == 0 and report.already_imported == 0 and not dry_run:
            error = f"Nothing could be imported. {report.summary_line()}"
            return Outcome(result, rejected, error)
        return Outcome(result, rejected)


REJECTED_FILE = "rejected.txt"


def write_rejected(job, errors: list[str], apart: list[tuple[str, list[str]]] = ()) -> str:
    """Every rejected record of an import, one `file:line: reason` line each
    (`file[index] (id=...): reason` in a JSON array): exactly the records its summary counts
    as rejected, where the job's result keeps only the first ImportReport's MAX_REPORTED.
    Then each list of `apart` (ImportReport.listed_apart: files not read, warnings) after a
    blank line and a `# heading` line, so the rejected records are the lines before the
    first blank one. Stored as imports/<job id>/rejected.txt; returns its stored name, or ""
    when there is nothing to list. A spreadsheet opens a .txt as one cell a line: a line
    that begins like a formula (a file named "=cmd...") is neutralised as a CSV cell is."""
    if not errors and not any(lines for _, lines in apart):
        return ""
    with tempfile.TemporaryDirectory(prefix="cardsort-") as folder:
        path = Path(folder, REJECTED_FILE)
        with path.open("w", encoding="utf-8") as out:
            for line in errors:
                out.write(neutralise(line.replace("\n", " ")) + "\n")
            for heading, lines in apart:
                if lines:
                    out.write(f"\n# {heading}\n")
                    for line in lines:
                        out.write(neutralise(line.replace("\n", " ")) + "\n")
        name = storage.job_name(storage.IMPORTS, job.pk, REJECTED_FILE)
        return storage.store_local(name, path, move=True)


class FilterStudyRun(JobRun):
    """params: filter ("coding"), apply -> job.result = {"filter": the coding filter's
    report over the study's current conversations, with what it set aside (or, a dry run,
    would)}. A dry run reads only; a real run sets aside in one transaction at its end, and a
    rerun finds the dropped ones already aside (never read again)."""

    task, what, unit = "run_filter_study", "coding filter", "conversations"

    def run(self, job, progress) -> Outcome:
        from .intake.coding_filter import rules_for
        from .intake.coding_report import filter_study

        apply = bool(job.params.get("apply"))
        report = filter_study(job.study, rules_for(job.study), apply=apply, progress=progress)
        job.total = report["scanned"]
        return Outcome({"filter": report})


ERRORS_SHOWN = 200


class LabelImportRun(JobRun):
    """params: files [{path, name}] (one JSONL of annotations, stored), create_members, judge
    -> job.result = {imported, rejected, errors (the first ERRORS_SHOWN lines), ...}. Batches
    commit as they go; running a lost job again re-imports its file, and a label already
    there is the same revision again (Annotation.same_as), never a duplicate."""

    task, what, unit, uploads = "run_label_import", "label import", "records", True

    def run(self, job, progress) -> Outcome:
        from .importers.annotations import import_annotations

        upload = job.params["files"][0]
        with storage.local_copy(upload["path"], self.scratch) as path:
            report = import_annotations(
                job.study,
                path,
                create_members=bool(job.params.get("create_members")),
                judge=bool(job.params.get("judge")),
                progress=progress,
            )
        # the lead's file name in the error lines, not our stored copy's
        errors = [
            line.replace(str(path), upload["name"], 1) for line in report.rejected[:ERRORS_SHOWN]
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
            return Outcome(result, error=f"Nothing could be imported. {report.summary()}")
        return Outcome(result)


class AgreementRun(JobRun):
    """params: round, seed, n_boot, version (a taxonomy version id; default the study's),
    dev_share (a scored judge's development split, default 0.3), by (a conversation metadata
    field: the episode measures per stratum) -> job.result = compute_study_report(...)."""

    task, what = "run_agreement", "agreement"

    def run(self, job, progress) -> Outcome:
        from taxonomy.models import TaxonomyVersion

        from .agreement.data import compute_study_report
        from .agreement.judge_data import DEV_SHARE

        params, version = job.params, job.params.get("version")
        result = compute_study_report(
            job.study,
            version=TaxonomyVersion.objects.get(pk=version) if version else None,
            round=int(params.get("round", 1)),
            n_boot=int(params.get("n_boot", 1000)),
            seed=int(params.get("seed", 0)),
            dev_share=float(params.get("dev_share", DEV_SHARE)),
            by=params.get("by") or None,
            progress=progress,
        )
        return Outcome(result)


class TimesRun(JobRun):
    """No params -> job.result = {"cards": the lead's three tables of time per card, "episodes":
    the per-annotator table of time per episode, "times_read", "computed_at"} over the whole
    study: every annotator's times, nothing hidden (annotation/timing.py card_times_result,
    episodes/timing.py episode_times_result). Rows per annotator and type, never per card.
    Whoever the stored tables would show a hidden time to never reads them
    (access.times_locked_reason): the page computes their own view live, and every route to
    a job's result withholds it (access.JobResults)."""

    task, what, unit = "run_times", "time per card", "times read"

    def run(self, job, progress) -> Outcome:
        from django.utils import timezone

        from .episodes.timing import episode_times_result
        from .timing import card_times_result

        computed_at = timezone.now()
        progress(0, 2, "reading the cards' times")
        cards, n_cards = card_times_result(job.study)
        progress(1, 2, "reading the episodes' times")
        episodes, n_episodes = episode_times_result(job.study)
        progress(2, 2)
        job.total = 2
        result = {"cards": cards, "episodes": episodes, "computed_at": computed_at.isoformat()}
        result["times_read"] = {"cards": n_cards, "episodes": n_episodes}
        return Outcome(result)


def export_filename(study_slug: str, raw: bool, fmt: str, unit: str = "turn") -> str:
    """study-gold.csv, study-raw.csv; the episode files study-gold-episodes.csv,
    study-raw-episodes.csv; the coverage ratings study-raw-coverage.csv."""
    suffix = "" if unit == "turn" else f"-{unit}s" if unit == "episode" else f"-{unit}"
    return f"{study_slug}-{'raw' if raw else 'gold'}{suffix}.{fmt}"


class ExportRun(JobRun):
    """params: format (csv|jsonl|parquet), raw (bool), round, with_text (bool), unit (turn,
    the default; episode; coverage: exports/episodes.py) -> the stored file
    exports/<job id>/<study>-gold.<format> (or -raw; -gold-episodes, -raw-episodes,
    -raw-coverage), its name in job.result_file. The
    export is written in the run's scratch folder and stored only when complete, and the job
    names it only once stored: a killed worker leaves no file the job offers, and what it may
    have half-copied into the storage goes when the lost job is reaped (discard_partial_output)
    or replaced when its message is run again. The file is made blind for whoever
    started the job (job.created_by; result blind_for, blind_for_id): if they annotate,
    their fellow annotators' labels on open cards stay out of it."""

    task, what, unit = "run_export", "export", "rows written"

    def run(self, job, progress) -> Outcome:
        from .exports import write_coverage, write_episodes, write_gold, write_raw
        from .models import Annotation, CoverageRating, Episode, EpisodeJudgement, Turn

        study, params = job.study, job.params
        fmt, raw = params.get("format", "csv"), bool(params.get("raw", False))
        round = params.get("round")
        with_text, reader = bool(params.get("with_text", False)), job.created_by
        unit = params.get("unit") or "turn"
        raw = raw or unit == "coverage"  # the ratings' one file: every rating
        if unit == "coverage":
            rows = CoverageRating.objects.filter(conversation__study=study)
        elif unit == "episode" and raw:
            rows = EpisodeJudgement.objects.filter(episode__conversation__study=study)
            if round is not None:
                rows = rows.filter(round=round)
        elif unit == "episode":
            rows = Episode.objects.filter(conversation__study=study)
        elif raw:
            rows = Annotation.objects.filter(turn__conversation__study=study)
            if round is not None:
                rows = rows.filter(round=round)
        else:
            # one gold row per card and group (the join repeats a card for each of its groups)
            rows = Turn.objects.filter(
                conversation__study=study, conversation__assignments__isnull=False
            )
        total = rows.count()
        progress(0, total)
        path = self.scratch / export_filename(study.slug, raw, fmt, unit)
        options = {"with_text": with_text, "blind_for": reader}
        options["progress"] = lambda n: progress(n, total)
        if unit == "coverage":
            n = write_coverage(study, path, fmt, blind_for=reader, progress=options["progress"])
        elif unit == "episode":
            n = write_episodes(
                study, path, fmt, raw=raw, round=round if raw else None, blind_for=reader,
                progress=options["progress"],
            )  # fmt: skip
        elif raw:
            n = write_raw(study, path, fmt, round=round, **options)
        else:
            n = write_gold(study, path, fmt, round=round or 1, **options)
        job.total = n
        stored = storage.store_local(
            storage.job_name(storage.EXPORTS, job.pk, path.name), path, move=True
        )
        result = {"rows": n, "format": fmt, "raw": raw, "round": round, "file": path.name}
        result["with_text"] = with_text
        result["unit"] = unit
        result["blind_for"] = reader.username if reader is not None else None
        result["blind_for_id"] = reader.pk if reader is not None else None
        return Outcome(result, stored)


class SplitRun(JobRun):
    """A splitting job (intake/split_run.py: params and result): asks the model about the
    chosen conversations or the study's, applies the open proposals if asked; it ends the job
    itself. Claimed like an import, so a lost job queued again (Job.resumable) resumes where
    it stopped."""

    task, what, claims = "run_split_proposals", "splitting", True

    def run(self, job, progress) -> None:
        from .intake.split_run import execute as split

        split(job, progress)


class JudgeJobRun(JobRun):
    """A machine judge's run (params: run, a JudgeRun id; actions/judges.py): its cards still
    to score, scored and labelled; the job's result the run's counts; it ends the job
    itself. Running the same judge again resumes its run where it stopped."""

    task, what, claims = "run_judge", "judge", True

    def run(self, job, progress) -> None:
        from .actions.judges import execute_job

        execute_job(job, progress)


run_import = job_task(ImportRun)
run_filter_study = job_task(FilterStudyRun)
run_label_import = job_task(LabelImportRun)
run_agreement = job_task(AgreementRun)
run_export = job_task(ExportRun)
run_split_proposals = job_task(SplitRun)
run_judge = job_task(JudgeJobRun)
run_times = job_task(TimesRun)
