"""The lead's agreement and export jobs: start them, follow them (an htmx partial that polls
until the job ends) and download an export. The "Jobs" panel sits on the study page
(views.study calls `jobs_panel_context`). Every view starts with get_study_for_lead, so a
non-lead gets a 404 on the partial, the POSTs and the download alike."""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .access import get_study_for_lead
from .agreement_data import data_stamp
from .exports import FORMATS
from .models import Job, JobKind, JobStatus, Study
from .tasks import run_agreement, run_export

RECENT_JOBS = 10
PANEL = "annotation/jobs/panel.html"


def _rounds(study: Study) -> list[int]:
    return list(range(1, study.discussion_rounds + 2))


class AgreementForm(forms.Form):
    round = forms.TypedChoiceField(coerce=int, initial=1)

    def __init__(self, study: Study, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["round"].choices = [(r, r) for r in _rounds(study)]


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS])
    raw = forms.BooleanField(required=False)


def _mark_stale(study: Study, job: Job) -> None:
    """job.stale on a finished agreement job: the data changed since it was computed. The
    stamp's aggregates scan the study's labels (about a second at a million cards), so the
    panel asks for it after the page is shown (hx-trigger="load" on the latest result)."""
    if job.kind == JobKind.AGREEMENT and job.status == JobStatus.DONE:
        job.stale = job.result.get("data_stamp") != data_stamp(study)


def jobs_panel_context(study: Study) -> dict:
    """What the study page's Jobs panel needs: a fixed number of queries."""
    Job.objects.reap_lost()
    jobs = list(
        study.jobs.filter(kind__in=[JobKind.AGREEMENT, JobKind.EXPORT]).select_related(
            "created_by"
        )[:RECENT_JOBS]
    )
    latest = next(
        (j for j in jobs if j.kind == JobKind.AGREEMENT and j.status == JobStatus.DONE), None
    )
    if latest is not None:
        latest.check_stale = True
    return {
        "jobs": jobs,
        "job_rounds": _rounds(study),
        "export_formats": FORMATS,
        "report_url": reverse("report", args=[study.slug]),
    }


def _get_job_for_lead(request: HttpRequest, slug: str, job_id: int) -> tuple[Study, Job]:
    study = get_study_for_lead(request.user, slug)
    job = get_object_or_404(
        Job.objects.select_related("created_by"),
        pk=job_id,
        study=study,
        kind__in=[JobKind.AGREEMENT, JobKind.EXPORT],
    )
    return study, job


def _panel_response(request: HttpRequest, study: Study) -> HttpResponse:
    if request.htmx:
        ctx = {"study": study, **jobs_panel_context(study)}
        return render(request, f"{PANEL}#panel", ctx)
    return redirect("study", study.slug)


@login_required
@require_POST
def start_agreement(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_lead(request.user, slug)
    form = AgreementForm(study, request.POST)
    if not form.is_valid():
        messages.error(request, f"Agreement not started: {_errors(form)}")
        return _panel_response(request, study)
    params = {"round": form.cleaned_data["round"], "seed": 0, "n_boot": 1000}
    _enqueue(request, study, JobKind.AGREEMENT, params, run_agreement)
    return _panel_response(request, study)


@login_required
@require_POST
def start_export(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_lead(request.user, slug)
    form = ExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Export not started: {_errors(form)}")
        return _panel_response(request, study)
    params = {"format": form.cleaned_data["format"], "raw": form.cleaned_data["raw"]}
    params["round"] = None if params["raw"] else 1
    _enqueue(request, study, JobKind.EXPORT, params, run_export)
    return _panel_response(request, study)


def _errors(form: forms.Form) -> str:
    return "; ".join(f"{name}: {e}" for name, errs in form.errors.items() for e in errs)


def _enqueue(request: HttpRequest, study: Study, kind: str, params: dict, task) -> Job:
    with transaction.atomic():
        job = Job.objects.create(study=study, kind=kind, params=params, created_by=request.user)
        transaction.on_commit(lambda: task.delay(job.pk))
    return job


@login_required
@require_GET
def job_detail(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """One job as the panel shows it; polled by htmx until the job ends."""
    Job.objects.reap_lost()
    study, job = _get_job_for_lead(request, slug, job_id)
    _mark_stale(study, job)
    ctx = {"study": study, "job": job, "report_url": reverse("report", args=[study.slug])}
    return render(request, f"{PANEL}#job", ctx)


@login_required
@require_GET
def job_download(request: HttpRequest, slug: str, job_id: int) -> FileResponse:
    study, job = _get_job_for_lead(request, slug, job_id)
    if job.kind != JobKind.EXPORT or job.status != JobStatus.DONE or not job.result_file:
        raise Http404("This job has no file to download")
    media = Path(settings.MEDIA_ROOT).resolve()
    path = (media / job.result_file).resolve()
    if not path.is_relative_to(media) or not path.is_file():
        raise Http404("The export file is no longer there; export again")
    return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
