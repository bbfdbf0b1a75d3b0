"""The lead's jobs: start an agreement or export job, follow any job (one htmx poller,
`job_detail`, and one partial, jobs/_job.html, for every kind and every page) and download
an export. The "Jobs" panel sits on the study page (views.study calls `jobs_panel_context`):
the study's jobs a page at a time, newest first, filtered by kind (`job_list` serves it to
htmx; the same links and form work on the study page without JavaScript); the conversations
page lists its imports with `recent_jobs`. Both reap lost jobs first.
Every view starts with get_study_for_lead, so a non-lead gets a 404 on the partial, the
POSTs and the download alike; and every job shown goes through access.JobResults first (the
templates read its `shown_result`, never `result`): an agreement result stays closed to a
lead the agreement lock applies to, as on the report page and in the API."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseForbidden,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from ..access import JobResults, get_job_for_lead, lead_page, lead_post
from ..agreement.data import data_stamp
from ..exports import is_raw, may_download
from ..forms import AgreementForm, ExportForm, form_errors
from ..jobs import NOT_BLIND_FOR_YOU, enqueue, open_result
from ..models import Job, JobKind, JobStatus, Study
from ..tasks import reap_lost_jobs, run_agreement, run_export
from .shared.jobs_panel import jobs_panel_context

PANEL = "annotation/jobs/panel.html"
JOB = "annotation/jobs/_job.html"
JOB_PAGE = "annotation/jobs/page.html"  # the same, opened as a page


def _mark_stale(study: Study, job: Job) -> None:
    """job.stale on a finished agreement job shown: the data changed since it was computed.
    The stamp's aggregates scan the study's labels (about a second at a million cards), so
    the panel asks for it after the page is shown (hx-trigger="load" on the latest result)."""
    if job.kind == JobKind.AGREEMENT and job.status == JobStatus.DONE and job.shown_result:
        job.stale = job.result.get("data_stamp") != data_stamp(study)


def _panel_response(request: HttpRequest, study: Study, http: int = 200) -> HttpResponse:
    if request.htmx:
        ctx = {"study": study, **jobs_panel_context(study, request.user)}
        return render(request, f"{PANEL}#panel", ctx, status=http)
    return redirect("study", study.slug)


@lead_page
@require_GET
def job_list(request: HttpRequest, study: Study) -> HttpResponse:
    """The Jobs panel with the page and kind asked for (its filter form and page links, htmx);
    without htmx, the study page showing the same. An unknown kind: 422, the form says so."""
    if not request.htmx:
        return redirect(reverse("study", args=[study.slug]) + _query(request) + "#jobs-panel")
    ctx = {"study": study, **jobs_panel_context(study, request.user, request.GET)}
    status = 422 if ctx["job_filter"].errors else 200
    return render(request, f"{PANEL}#panel", ctx, status=status)


def _query(request: HttpRequest) -> str:
    query = request.GET.urlencode()
    return f"?{query}" if query else ""


@lead_post
def start_agreement(request: HttpRequest, study: Study) -> HttpResponse:
    form = AgreementForm(study, request.POST)
    if not form.is_valid():
        messages.error(request, f"Agreement not started: {form_errors(form)}")
        return _panel_response(request, study, http=422)
    params = {"round": form.cleaned_data["round"], "seed": 0, "n_boot": 1000}
    version = form.cleaned_data["version"]
    if version is not None and version != study.taxonomy_version_id:
        params["version"] = version  # an old version's report (annotation/evolution/)
    if form.cleaned_data["by"]:
        params["by"] = form.cleaned_data["by"]  # the episode measures per stratum
    enqueue(request.user, study, JobKind.AGREEMENT, params, run_agreement)
    return _panel_response(request, study)


@lead_post
def start_export(request: HttpRequest, study: Study) -> HttpResponse:
    form = ExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Export not started: {form_errors(form)}")
        return _panel_response(request, study, http=422)
    params = {
        "format": form.cleaned_data["format"],
        "raw": form.cleaned_data["raw"],
        "with_text": form.cleaned_data["with_text"],
        "unit": form.cleaned_data["unit"],
    }
    params["raw"] = is_raw(params["unit"], params["raw"])
    params["round"] = None if params["raw"] else 1
    enqueue(request.user, study, JobKind.EXPORT, params, run_export)
    return _panel_response(request, study)


@login_required
@require_GET
def job_detail(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """One job, of any kind, as every page shows it; polled by htmx until the job ends."""
    reap_lost_jobs()
    study, job = get_job_for_lead(request.user, slug, job_id)
    JobResults(request.user, study).shown([job])
    _mark_stale(study, job)
    ctx = {"study": study, "job": job, "report_url": reverse("report", args=[study.slug])}
    response = render(request, JOB if request.htmx else JOB_PAGE, ctx)
    if job.is_finished and request.htmx:
        # the last poll: the conversations page refreshes its counts on this event
        response["HX-Trigger"] = "job-finished"
    return response


@login_required
@require_GET
def job_download(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """An export's file, or an import's full list of rejected records (rejected.txt)."""
    study, job = get_job_for_lead(request.user, slug, job_id)
    if withheld := JobResults(request.user, study).withheld(job):
        return HttpResponseForbidden(withheld, content_type="text/plain; charset=utf-8")
    if job.kind == JobKind.IMPORT and job.result_file:
        return _rejected_download(study, job)
    if job.kind != JobKind.EXPORT or job.status != JobStatus.DONE or not job.result_file:
        raise Http404("This job has no file to download")
    if not may_download(request.user, study, job.result):
        return HttpResponseForbidden(NOT_BLIND_FOR_YOU, content_type="text/plain; charset=utf-8")
    stored, name = open_result(job)
    return FileResponse(stored, as_attachment=True, filename=name)


def _rejected_download(study: Study, job: Job) -> HttpResponse:
    stored, _ = open_result(job)
    name = f"{study.slug}-import-{job.pk}-rejected.txt"
    response = FileResponse(stored, as_attachment=True, filename=name)
    response["Content-Type"] = "text/plain; charset=utf-8"
    return response
