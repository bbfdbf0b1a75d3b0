"""Run a `times` job (the lead's "Compute" on time per card) in the test's process, as the
worker would: the kept tables the time page reads."""

from __future__ import annotations

from annotation.models import Job, JobKind
from annotation.tasks import run_times


def compute_times(study, user=None) -> Job:
    job = Job.objects.create(study=study, kind=JobKind.TIMES, created_by=user)
    run_times(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job
