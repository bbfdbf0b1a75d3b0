"""The study's background jobs as both front doors start and read them (the lead's pages,
annotation/views/jobs.py and views/lead.py, and the API, annotation/api/jobs.py): queue a
job, store a label import's upload and queue it, find a job's file. Who may read a job's
result is access.JobResults; who may download an export, exports.may_download."""

from __future__ import annotations

from pathlib import PurePosixPath

from django.core.files import File
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from . import storage
from .models import Conversation, Job, JobKind, JobStatus, Study
from .tasks import run_label_import, write_rejected
from .uploads import safe_name

NOT_BLIND_FOR_YOU = (
    "This export was not made for you: you annotate in this study, and the file may show "
    "other annotators' round-1 labels on cards still open in your groups. Please start "
    "your own export from the study page; it leaves those labels out."
)


def enqueue(user, study: Study, kind: str, params: dict, task) -> Job:
    """A job of `kind` for the study, started by `user`, queued on `task` once the
    transaction commits."""
    with transaction.atomic():
        job = Job.objects.create(study=study, kind=kind, params=params, created_by=user)
        transaction.on_commit(lambda: task.delay(job.pk))
    return job


def open_result(job: Job) -> tuple[File, str]:
    """The job's stored file (Job.result_file) opened for a download, and its base name; a
    404 when it is not a name a job writes or no longer there."""
    try:
        stored = storage.open_stored(job.result_file)
    except FileNotFoundError:
        raise Http404("The file is no longer there; run the job again") from None
    return stored, PurePosixPath(job.result_file).name


def save_uploads(job: Job, uploads: list, under: str = "") -> list[dict]:
    """Store the uploads as imports/<job id>/[under/]<n>-<name> (annotation/storage.py) and
    remember each original name: the import's error messages must name the file the lead
    chose, not our copy (stored under uploads.safe_name: bounded, one path component, its
    extension kept). Each is streamed to the storage, never read whole."""
    files = []
    for i, upload in enumerate(uploads, 1):
        safe = safe_name(upload.name)
        # numbered (in the order chosen): two uploads may share a name
        name = storage.job_name(
            storage.IMPORTS, job.pk, under, f"{i:05d}-{safe}" if under else f"{i}-{safe}"
        )
        files.append({"path": storage.save_upload(name, upload), "name": upload.name})
    return files


def start_label_import(study: Study, user, upload, *, create_members: bool, judge: bool) -> Job:
    """Store an uploaded JSONL of annotations and queue its import (tasks.run_label_import):
    the page and the API start it alike."""
    with transaction.atomic():
        params = {"create_members": create_members, "judge": judge}
        job = Job.objects.create(
            study=study, kind=JobKind.LABEL_IMPORT, created_by=user, params=params
        )
        job.params["files"] = save_uploads(job, [upload])
        job.save(update_fields=["params"])
        transaction.on_commit(lambda: run_label_import.delay(job.pk))
    return job


def record_run(study: Study, kind: str, params: dict, result: dict, *, started_at) -> Job:
    """A job a management command ran in its own process, kept as a finished job of `kind`
    like the ones the pages start (params["via"] = "command"): listed on the study's pages,
    read by the report page and the methods section (annotation/methods)."""
    return Job.objects.create(
        study=study,
        kind=kind,
        status=JobStatus.DONE,
        params={**params, "via": "command"},
        result=result,
        started_at=started_at,
        finished_at=timezone.now(),
    )


def record_command_import(
    study: Study,
    report,
    *,
    files: list,
    fmt: str,
    filter_report: dict | None,
    after_id: int,
    started_at,
) -> Job:
    """`manage.py import_conversations` kept as the finished import job the import page would
    have made (its files, format, counts, rejected records and the filter's report), owning
    the conversations it wrote: the study's conversations of no job with an id above
    `after_id` (the highest id before the import)."""
    params = {"format": fmt, "files": [{"name": str(f)} for f in files]}
    result = report.as_dict()
    if filter_report is not None:
        params["filter"] = "coding"
        result["filter"] = filter_report
    with transaction.atomic():
        job = record_run(study, JobKind.IMPORT, params, result, started_at=started_at)
        Conversation.objects.filter(
            study=study, import_job__isnull=True, split_from__isnull=True, pk__gt=after_id
        ).update(import_job=job)
        job.result_file = write_rejected(job, report.errors)
        job.save(update_fields=["result_file"])
    return job
