"""A group on a page: the `?group=` parameter of the discussion pages, and the group's box
on the lead's groups page (its counts; the answer to an htmx change of it)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db.models import F, Prefetch
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ...models import Group, Study


def group_param(request: HttpRequest) -> int | None:
    """`?group=<id>` (also on a form's action URL); anything else is no such card."""
    value = request.GET.get("group")
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise Http404("No such group") from None


def groups_with_counts(study: Study):
    User = get_user_model()
    return (
        study.groups.select_related("moderator")
        .prefetch_related(Prefetch("annotators", queryset=User.objects.order_by("username")))
        .annotate(  # the kept figures (issue 25): one row a group, not its assignments
            n_conversations=Coalesce(F("figures__conversations"), 0),
            n_turns=Coalesce(F("figures__cards"), 0),
        )
    )


def group_response(request: HttpRequest, study: Study, group: Group, error: str) -> HttpResponse:
    """The group's box for htmx (a refusal: 422 with its message); the plain-POST fallback
    goes back to the groups page."""
    if request.htmx:
        ctx = {"study": study, "group": groups_with_counts(study).get(pk=group.pk), "error": error}
        return render(
            request, "annotation/lead/groups.html#group", ctx, status=422 if error else 200
        )
    if error:
        messages.error(request, error)
    return redirect("lead_groups", study.slug)
