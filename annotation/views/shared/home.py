"""The home page: each of my studies with my progress, and the "New study" form (a refused
form comes back here, from studies.py)."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import render

from ...actions.studies import may_create_studies
from ...forms import StudyForm
from ...models import Study
from .nav import studies_progress


def home_page(request: HttpRequest, form: StudyForm | None = None, status: int = 200):
    """Each of my studies with my progress (and, where I lead, its cards per state): a fixed
    number of queries, whatever the number of studies (nav.studies_progress); and the "New
    study" form for whoever may create studies."""
    if request.user.is_superuser:
        studies = Study.objects.all()
    else:
        studies = Study.objects.filter(memberships__user=request.user)
    rows = studies_progress(request.user, list(studies.order_by("slug")))
    if form is None and may_create_studies(request.user):
        form = StudyForm()
    return render(request, "annotation/home.html", {"rows": rows, "form": form}, status=status)
