"""The moderator's next escalated card, then episode (the counts it walks are shared/nav.py's,
which says the order)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from ..access import get_moderated_groups, get_study_for_user
from .shared.nav import escalated_episodes_for, escalated_for

NONE_ESCALATED = "No escalated cards left for you."


@login_required
@require_GET
def next_escalated(request: HttpRequest, slug: str) -> HttpResponse:
    """The discussion page of the longest waiting escalated card I may decide, else the card
    of the first escalated episode I may decide (session order), else back to the
    moderation queue, which says none are left."""
    study, role = get_study_for_user(request.user, slug)
    get_moderated_groups(request.user, study, role)  # 404 for whoever moderates nothing
    found = escalated_for(request.user, study, role).values_list("turn_id", "group_id").first()
    if found is None:
        episodes = escalated_episodes_for(request.user, study, role)
        if episodes:
            nxt = episodes[0]
            url = reverse("episode_card", args=[study.slug, nxt.episode_id])
            return redirect(f"{url}?group={nxt.group.pk}")
        messages.info(request, NONE_ESCALATED)
        return redirect("moderate_queue", study.slug)
    turn_id, group_id = found
    return redirect(reverse("discussion", args=[study.slug, turn_id]) + f"?group={group_id}")
