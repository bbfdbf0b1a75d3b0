"""The study page's Jobs panel and the recent jobs a page lists (the conversations page's
imports, the split page's runs): the study's jobs as the user may see them
(access.JobResults), lost ones reaped first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import QueryDict
from django.urls import reverse

from ...access import JobResults
from ...exports import EXPORT_FORMATS
from ...forms import JobFilter
from ...models import Job, JobKind, JobStatus, Study
from ...tasks import reap_lost_jobs

RECENT_JOBS = 10

JOBS_PER_PAGE = 10


def _rounds(study: Study) -> list[int]:
    return list(range(1, study.discussion_rounds + 2))


def recent_jobs(study: Study, user, kinds: list[str]) -> list[Job]:
    """The study's latest jobs of these kinds as `user` may see them (access.JobResults),
    lost ones reaped first: wherever jobs are shown, a job whose worker was killed shows as
    failed, not running forever."""
    reap_lost_jobs()
    latest = study.jobs.filter(kind__in=kinds).select_related("created_by")[:RECENT_JOBS]
    return JobResults(user, study).shown(latest)


def jobs_panel_context(study: Study, user, params: QueryDict | None = None) -> dict:
    """What the study page's Jobs panel needs: one page of the study's jobs of every kind (or
    the kind `params` asks for), newest first, its page `jobs_page`; lost jobs reaped first.
    A fixed number of queries, however many jobs. An unknown kind lists every kind, and the
    form says what was wrong (`job_filter`)."""
    params = params if params is not None else QueryDict()
    job_filter = JobFilter(params)
    kind = job_filter.cleaned_data["kind"] if job_filter.is_valid() else ""
    reap_lost_jobs()
    listed = study.jobs.select_related("created_by")
    if kind:
        listed = listed.filter(kind=kind)
    page = Paginator(listed, JOBS_PER_PAGE).get_page(params.get("jobs_page"))
    jobs = JobResults(user, study).shown(page)
    latest = next(
        (j for j in jobs if j.kind == JobKind.AGREEMENT and j.status == JobStatus.DONE), None
    )
    if latest is not None and latest.shown_result:
        latest.check_stale = True
    return {
        "jobs": jobs,
        "jobs_page": page,
        "job_filter": job_filter,
        "jobs_query": urlencode({"kind": kind}) if kind else "",
        "job_rounds": _rounds(study),
        "job_versions": study.report_versions(),
        "export_formats": EXPORT_FORMATS,
        "report_url": reverse("report", args=[study.slug]),
    }
