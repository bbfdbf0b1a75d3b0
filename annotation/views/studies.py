"""Creating a study from the studies page (the home page's "New study" form): for a user
with the `annotation.add_study` permission (a superuser has it), who becomes its lead. The
rules are actions/studies.py's, the same as `manage.py create_study --lead`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..actions.studies import StudyRefused, create_study, may_create_studies
from ..forms import StudyForm
from .shared.home import home_page

NOT_ALLOWED = (
    "You may not create studies: an administrator gives that right (the permission "
    "“Can add study”), or creates the study for you (manage.py create_study --lead)."
)


@login_required
@require_POST
def new_study(request: HttpRequest) -> HttpResponse:
    if not may_create_studies(request.user):
        raise PermissionDenied(NOT_ALLOWED)
    form = StudyForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            study = create_study(
                data["slug"],
                lead=request.user,
                name=data["name"],
                taxonomy=data["taxonomy"],
                phase=data["phase"],
            )
        except StudyRefused as e:
            form.add_error(e.field if e.field in form.fields else None, str(e))
        else:
            messages.success(
                request,
                f"Study {study.slug} created; you lead it. Next: import its conversations, "
                "then set up groups and assign them.",
            )
            return redirect("study", study.slug)
    # nothing was created: the form comes back as typed, each error by its field
    return home_page(request, form, status=422)
