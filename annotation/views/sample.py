"""The lead's sample page: the sample size calculator (live as the lead types, htmx) and the
study's sample with its methods paragraph to copy or download (annotation/intake/sampling.py;
the draw itself is `manage.py sample`)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from ..access import lead_page
from ..forms import SampleSizeForm
from ..intake.sampling import describe, size_for, strata_lines
from ..models import Conversation, Sample, SetAside, Study


def _population(study: Study) -> int:
    # the set and what a sample set aside: what a new draw (with --replace) draws from
    rows = Conversation.objects.visible().filter(
        study=study, set_aside__in=[SetAside.NO, SetAside.SAMPLE]
    )
    return rows.count()


@lead_page
def sample_page(request: HttpRequest, study: Study) -> HttpResponse:
    data = request.GET if "population" in request.GET else None
    defaults = {"population": _population(study), "confidence": 0.95, "margin": 0.05}
    form = SampleSizeForm(data or {**defaults, "proportion": 0.5})
    size = size_for(**form.cleaned_data) if form.is_valid() else None
    sample = study.samples.first()
    ctx = {
        "study": study,
        "form": form,
        "size": size,
        "lines": describe(size)[1:] if size else [],
        "sample": sample,
        # by name: PostgreSQL's jsonb keeps its own key order
        "strata": sorted(sample.strata.items()) if sample else [],
    }
    status = 200 if size else 422
    if request.htmx:
        return render(request, "annotation/lead/sample.html#size", ctx, status=status)
    return render(request, "annotation/lead/sample.html", ctx, status=status)


def methods_text(sample: Sample) -> str:
    """The methods paragraph, then the strata (if any): the .txt download."""
    lines = [sample.methods]
    if sample.strata:
        lines += ["", "Strata (drawn of population):", *strata_lines(sample)]
    return "\n".join(lines) + "\n"


@lead_page
def methods_download(request: HttpRequest, study: Study) -> HttpResponse:
    sample = study.samples.first()
    if sample is None:
        raise Http404("No sample drawn yet")
    response = HttpResponse(methods_text(sample), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-sample.txt"'
    return response
