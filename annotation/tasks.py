"""Celery tasks: thin. They load a Job by id and call the domain code, which is imported
inside the task so a worker starts without loading every importer up front."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from celery import shared_task
from django.conf import settings

logger = logging.getLogger(__name__)

# Progress is written at most this often: a per-record UPDATE would slow a large import
# down and lock SQLite for the web process.
PROGRESS_EVERY_SECONDS = 0.5


@shared_task
def run_import(job_id: int) -> None:
    from .importers import import_files
    from .models import Job, JobStatus

    job = Job.objects.select_related("study").get(pk=job_id)
    if job.is_finished:
        # A redelivered message (acks_late) for a job that already ended: importing again
        # would duplicate its conversations.
        logger.warning("import job %s is already %s; not running it again", job.pk, job.status)
        return
    # Uploads are stored relative to MEDIA_ROOT, so web and worker may mount it anywhere.
    media = Path(settings.MEDIA_ROOT)
    paths = [media / f["path"] for f in job.params["files"]]
    names = {str(media / f["path"]): f["name"] for f in job.params["files"]}
    if job.status == JobStatus.RUNNING:
        removed = _remove_partial_import(job, list(names.values()))
        logger.warning(
            "import job %s was left running by a lost worker; removed the %s conversations "
            "it had written and running it again",
            job.pk,
            removed,
        )
    job.start(total=0)
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if done < total and now - last_write < PROGRESS_EVERY_SECONDS:
            return
        last_write = now
        Job.objects.filter(pk=job.pk).update(progress=done, total=total)
        job.progress, job.total = done, total

    try:
        report = import_files(
            job.study, paths, fmt=job.params["format"], progress=progress, display_names=names
        )
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        job.fail(f"{type(exc).__name__}: {exc}")
        return
    if report.conversations == 0:
        job.fail(f"Nothing could be imported. {report.summary_line()}", result=report.as_dict())
    else:
        job.finish(report.as_dict())


def _remove_partial_import(job, names: list[str]) -> int:
    """The importer commits batch by batch, so a killed worker leaves the first batches in
    the database; WildChat ids repeat, so a re-run cannot tell them apart and would import
    them twice. Remove what this job wrote (its files, since it started), unless a lead has
    already assigned it."""
    from .models import Conversation

    if job.started_at is None:
        return 0
    written = Conversation.objects.filter(
        study=job.study,
        source_file__in=names,
        created_at__gte=job.started_at,
        group__isnull=True,
    )
    deleted, per_model = written.delete()
    return per_model.get("annotation.Conversation", 0)
