"""The open sort's pages (annotation/opensort/tagging.py holds the rules): the autocomplete
of one's own tags, and the lead's switch of the study or a group into and out of the open
sort. The card's tag panel is annotation/opensort/card.py's provider; its submit,
views/shared/tags.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from ..access import get_study_for_user, lead_post
from ..models import Group, Phase, Study
from ..opensort import tagging
from .shared.groups import group_response


@login_required
@require_GET
def tag_search(request: HttpRequest, slug: str) -> HttpResponse:
    """The autocomplete of the tag box: the requesting user's own tags in the study, never
    anyone else's (the box's own name is `new_tag`; `q` for other callers)."""
    study, _ = get_study_for_user(request.user, slug)
    text = request.GET.get("q", request.GET.get("new_tag", ""))
    tags = tagging.search_my_tags(study, request.user, text)
    ctx = {"tags": tags, "query": text}
    return render(request, "annotation/opensort/_suggestions.html", ctx)


# --- the lead's switch -------------------------------------------------------------------------


@lead_post
def study_phase(request: HttpRequest, study: Study) -> HttpResponse:
    """Switch the whole study (and the groups that follow it) into or out of the open sort."""
    phase = request.POST.get("phase", "")
    try:
        tagging.set_study_phase(study, phase)
    except tagging.PhaseRefused as e:
        messages.error(request, f"Phase not changed: {e}")
    else:
        messages.success(request, f"The study is now in the {Phase(phase).label.lower()}.")
    return redirect("lead_groups", study.slug)


@lead_post
def group_phase(request: HttpRequest, study: Study, group_id: int) -> HttpResponse:
    """Give one group its own phase, or let it follow the study's; the group's box again
    for htmx (a refusal: 422 with its reason)."""
    group = get_object_or_404(Group, pk=group_id, study=study)
    error = ""
    try:
        tagging.set_group_phase(group, request.POST.get("phase", ""))
    except tagging.PhaseRefused as e:
        error = f"Phase not changed: {e}"
    else:
        if not request.htmx:
            group.refresh_from_db()
            messages.success(request, f"Group {group}: {phase_label(group)}.")
    return group_response(request, study, group, error)


def phase_label(group: Group) -> str:
    """The group's phase in words, saying when it follows the study's."""
    label = Phase(group.effective_phase).label.lower()
    return f"{label} (the study's)" if not group.phase else label
