"""The report page's Machine judges panel (issue 22, point 4): the study's judge runs (judge,
version, model, status, progress, counts, calls, tokens, times) and a form to start one, a
dry run first if asked, as a background JUDGE job with progress (the panel polls itself
while a run is going); a finished run's threshold can be changed (its labels written again
from the kept scores, no call). Leads only, and not while the agreement lock applies to
them (access.get_study_for_judges): nothing of a judge reaches an annotator or a
moderator. The same domain functions as `manage.py run_judge` (actions/judges.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..access import get_study_for_judges
from ..actions.judges import (
    JudgeRefused,
    estimate_line,
    prepare,
    rethreshold,
    start,
)
from ..models import JudgeRun, Study
from ..tasks import run_judge
from .shared.judges_panel import JudgeRunForm, panel_context

PANEL = "annotation/judges/_panel.html"


def _answer(request: HttpRequest, study: Study, ctx: dict | None = None, status: int = 200):
    if not request.htmx:
        return redirect(reverse("report", args=[study.slug]) + "#judges")
    ctx = {"study": study, **panel_context(request.user, study), **(ctx or {})}
    return render(request, PANEL, ctx, status=status)


@login_required
@require_GET
def judge_runs(request: HttpRequest, slug: str) -> HttpResponse:
    """The panel (htmx, polled while a run is going); without htmx, the report page."""
    study = get_study_for_judges(request.user, slug)
    return _answer(request, study)


@login_required
@require_POST
def judge_run_start(request: HttpRequest, slug: str) -> HttpResponse:
    """A run from the form: its estimate (a dry run), else the run started as a job."""
    study = get_study_for_judges(request.user, slug)
    form = JudgeRunForm(study, request.POST)
    if not form.is_valid():
        return _answer(request, study, panel_context(request.user, study, form), status=422)
    try:
        run = prepare(study, form.request(), by=request.user)
    except JudgeRefused as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return _answer(request, study, panel_context(request.user, study, form), status=422)
    if form.cleaned_data["dry_run"]:
        return _answer(request, study, {"judge_estimate": estimate_line(run)})
    start(run, run_judge, by=request.user)
    return _answer(request, study)


@login_required
@require_POST
def judge_run_rethreshold(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    study = get_study_for_judges(request.user, slug)
    run = get_object_or_404(JudgeRun.objects.select_related("study"), pk=run_id, study=study)
    try:
        done = rethreshold(run, float(request.POST.get("threshold", "")))
    except ValueError as exc:
        return _answer(request, study, {"judge_error": str(exc)}, status=422)
    note = f"Run #{run.pk} relabelled: {done['labelled']} of {done['cards']} cards labelled."
    return _answer(request, study, {"judge_estimate": note})
