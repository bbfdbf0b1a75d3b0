"""The lead's split-check page: a split-check study made from a seeded sample of this
study's split points (annotation/intake/splitcheck.py). A few hundred conversations of one
turn each, written in one transaction with bulk inserts: quick enough for the request."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from ..access import lead_page
from ..forms import SplitCheckForm
from ..intake.splitcheck import SplitCheckError, count_split_points, create_split_check
from ..models import Study


@lead_page
@require_http_methods(["GET", "POST"])
def split_check(request: HttpRequest, study: Study) -> HttpResponse:
    n_points = count_split_points(study)
    if request.method != "POST":
        initial = {"slug": f"{study.slug}-split-check", "n": min(n_points, 383) or None}
        return _page(request, study, SplitCheckForm(initial=initial), n_points)
    form = SplitCheckForm(request.POST)
    if not form.is_valid():
        return _page(request, study, form, n_points, http=422)
    data = form.cleaned_data
    try:
        new = create_split_check(
            study, data["slug"], n=data["n"], seed=data["seed"], name=data["name"],
            created_by=request.user,
        )  # fmt: skip
    except SplitCheckError as exc:
        form.add_error(None, str(exc))
        return _page(request, study, form, n_points, http=422)
    messages.success(request, f"Created {new.name}: {new.description}")
    return redirect("study", new.slug)


def _page(
    request: HttpRequest, study: Study, form: SplitCheckForm, n_points: int, http: int = 200
) -> HttpResponse:
    ctx = {"study": study, "form": form, "n_points": n_points}
    return render(request, "annotation/lead/split_check.html", ctx, status=http)
