"""Moderation and discussion of episodes (issue 21: what works on cards works on episodes):
the moderator's queue of escalated episodes, the moderator's decision on the episode card
(its moderator mode: every annotator's judgements of every round, never an extraction run's
verdict, labels or confidence), and the episode's discussion thread. Both forms post with
htmx and get their partial back (a refusal: the same partial with the error and what was
posted, 409 or 422); without htmx a success redirects to the card and a refusal shows the
partial on a page of its own. Who may, and when, is the server's:
access.get_episode_for_member for the seat, access.may_see_episode_discussion for the thread
and the decision, actions/episode_decisions for the rounds' rule."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..access import (
    EpisodeSeat,
    get_episode_for_member,
    get_moderated_groups,
    get_study_for_user,
    may_see_episode_discussion,
)
from ..actions import episode_decisions
from ..actions.episode_decisions import CommentRefused, DecisionRefused
from ..actions.episode_judgements import JudgementError, read
from ..episodes import rounds
from ..episodes.moderation import load_episodes, moderated_episodes
from ..episodes.reasons import INVALID_REASONS
from ..models import CardStatus
from .shared.episode_discussion import decide_form, labels_in_words, moderation_context

ANNOTATORS_DO_NOT_DECIDE = "You judge this episode: its moderator or a lead decides it."
REFUSED_PAGE = "annotation/episode/refused.html"
PAGE_SIZE = 50


def _seat(request: HttpRequest, slug: str, episode_id: int):
    study, role = get_study_for_user(request.user, slug)
    value = request.GET.get("group", "")
    group_id = int(value) if value.isdigit() else None
    seat = get_episode_for_member(request.user, study, role, episode_id, group_id)
    return study, role, seat


def _card_url(seat: EpisodeSeat) -> str:
    url = reverse("episode_card", args=[seat.group.study.slug, seat.episode.pk])
    return url if seat.is_annotator else f"{url}?group={seat.group.pk}"


def _partial(request, seat, template: str, ctx: dict, http: int) -> HttpResponse:
    """A form's partial: alone for htmx, else on a page of its own leading back to the card."""
    ctx = {"study": seat.group.study, "episode": seat.episode, "group": seat.group, **ctx}
    if request.htmx:
        return render(request, template, ctx, status=http)
    ctx |= {"partial": template, "card_url": _card_url(seat)}
    return render(request, REFUSED_PAGE, ctx, status=http)


@login_required
@require_POST
def episode_decide(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    """The moderator's decision on an escalated episode: a verdict under the annotators'
    rules (the reason, the axes' limits and conditions) and a rationale. Refused, nothing
    saved, the form sent back with what was posted and why: 409 for an episode that is not
    escalated or is decided already, 422 for bad input. Decided: on to the next escalated
    episode of the moderator's groups, else back to this card."""
    study, role, seat = _seat(request, slug, episode_id)
    if seat.is_annotator:
        raise PermissionDenied(ANNOTATORS_DO_NOT_DECIDE)
    types = study.taxonomy_version.type_list()
    error, http = "", 200
    try:
        posted = read(request.POST, types)
        episode_decisions.decide(
            seat.episode, seat.group, request.user, posted, request.POST.get("rationale", "")
        )
    except JudgementError as e:
        error, http = str(e), 422
    except DecisionRefused as e:
        error, http = str(e), (422 if str(e).startswith("Rationale") else 409)
    if error:
        ctx = decide_form(study, request.POST) | {"decide_error": f"Not decided: {error}"}
        ctx["decide_url"] = reverse("episode_decide", args=[slug, seat.episode.pk])
        return _partial(request, seat, "annotation/episode/_decide.html", ctx, http)
    verdict = "valid" if posted.valid else f"invalid ({INVALID_REASONS[posted.reason]})"
    if posted.valid and posted.labels:
        verdict += f": {labels_in_words(posted.labels, types)}"
    messages.success(request, f"Episode decided: {verdict}.", extra_tags="saved")
    groups = get_moderated_groups(request.user, study, role)
    waiting = moderated_episodes(groups, study, request.user)
    waiting = [w for w in waiting if w.state.status == CardStatus.ESCALATED]
    url = _card_url(seat)
    if waiting:  # the next escalated episode, as the cards' moderation goes on
        nxt = waiting[0]
        url = reverse("episode_card", args=[slug, nxt.episode_id]) + f"?group={nxt.group.pk}"
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@login_required
@require_POST
def episode_comment(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    """Add to the episode's thread in its group (its annotators once they judged round 1,
    its moderator, a lead): the thread back, newest at the bottom."""
    study, _, seat = _seat(request, slug, episode_id)
    state = rounds.state_of(seat.episode.pk, seat.group)
    error, http, sent = "", 200, ""
    text = request.POST.get("text", "")
    if not may_see_episode_discussion(request.user, seat, state.revealed):
        error = (
            "The discussion opens once round 1 is over and you have judged the episode: "
            "nothing was sent."
        )
        http = 409
    else:
        try:
            if "\x00" in text:
                raise CommentRefused("Comment: a NUL character cannot be stored; remove it.")
            episode_decisions.comment(seat.episode, seat.group, request.user, text)
            sent = f"Comment sent (round {state.round})."
        except CommentRefused as e:
            error = str(e)
            http = 422 if error.startswith(("Write", "Comment")) else 409
    if not request.htmx and not error:
        messages.success(request, sent, extra_tags="saved")
        return redirect(_card_url(seat) + "#episode-thread")
    ctx = moderation_context(request, seat, state)  # nothing of it to whoever may not read it
    ctx |= {"comment_sent": sent, "comment_error": error}
    ctx |= {"comment_text": text.strip() if error else ""}
    return _partial(request, seat, "annotation/episode/_thread.html", ctx, http)


@login_required
@require_GET
def moderate_episodes(request: HttpRequest, slug: str) -> HttpResponse:
    """The escalated episodes of the groups I moderate (a lead: every group), then the
    disputed ones: a tab of the moderation queue. Never an extraction run's verdict."""
    study, role = get_study_for_user(request.user, slug)
    groups = get_moderated_groups(request.user, study, role)
    waiting = moderated_episodes(groups, study, request.user)
    counts = {s: sum(w.state.status == s for w in waiting) for s in ("escalated", "disputed")}
    page = Paginator(waiting, PAGE_SIZE).get_page(request.GET.get("page"))
    load_episodes(page.object_list)  # the rows shown, in one query
    ctx = {"study": study, "page": page, "counts": counts}
    return render(request, "annotation/episode/moderate_queue.html", ctx)
