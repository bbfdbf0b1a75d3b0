"""The lead's split-check page: a split-check study made from a seeded sample of this
study's entries (the default) or split points (annotation/intake/splitcheck). A few hundred
conversations of one turn each, written in one transaction with bulk inserts: quick enough
for the request."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from ..access import lead_page
from ..forms import SplitCheckForm
from ..intake.sampling import sample_size
from ..intake.splitcheck import (
    BOUNDARIES,
    ENTRIES,
    SplitCheckError,
    count_units,
    create_split_check,
    open_proposals,
)
from ..models import Study


@lead_page
@require_http_methods(["GET", "POST"])
def split_check(request: HttpRequest, study: Study) -> HttpResponse:
    counts = {ENTRIES: count_units(study, ENTRIES), BOUNDARIES: count_units(study, BOUNDARIES)}
    if request.method != "POST":
        initial = {"slug": f"{study.slug}-split-check", "n": sample_size(counts[ENTRIES]) or None}
        return _page(request, study, SplitCheckForm(initial=initial), counts)
    form = SplitCheckForm(request.POST)
    if not form.is_valid():
        return _page(request, study, form, counts, http=422)
    data = form.cleaned_data
    try:
        new = create_split_check(
            study, data["slug"], unit=data["unit"], n=data["n"], seed=data["seed"],
            name=data["name"], created_by=request.user,
        )  # fmt: skip
    except SplitCheckError as exc:
        form.add_error(None, str(exc))
        return _page(request, study, form, counts, http=422)
    messages.success(request, f"Created {new.name}: {new.description}")
    return redirect("study", new.slug)


def _page(
    request: HttpRequest, study: Study, form: SplitCheckForm, counts: dict, http: int = 200
) -> HttpResponse:
    ctx = {
        "study": study,
        "form": form,
        "n_entries": counts[ENTRIES],
        "n_points": counts[BOUNDARIES],
        "n_open": open_proposals(study) if counts[ENTRIES] else 0,
        "auto_n": sample_size(counts[ENTRIES]),
    }
    return render(request, "annotation/lead/split_check.html", ctx, status=http)
