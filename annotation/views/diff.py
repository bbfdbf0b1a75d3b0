"""Code across turns: the diff partial of a card, fetched on demand (key d) by the card and
the discussion page, never while rendering them. Each code block of the card's reply against
the closest code block of the earlier replies (annotation/codediff.py), side by side or
unified (`?view=split|unified`).

Access: whoever may open the card (access.get_card_for_annotator) or its discussion page
(access.get_card_for_discussion: the group's moderator, a lead; `?group=` as there). The
partial shows conversation text only, never labels or notes, so nothing of round 1 is in it;
the text is escaped by the template like all conversation text."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..access import get_card_for_annotator, get_card_for_discussion, get_study_for_user
from ..codediff import diff_reply
from ..models import Study, Turn

VIEWS = {"split": "Side-by-side view", "unified": "Unified view"}


def _get_turn_for_user(request: HttpRequest, study: Study, role: str, turn_id: int) -> Turn:
    """The card if the user annotates it, else if they may open its discussion page."""
    try:
        turn, _group = get_card_for_annotator(request.user, study, turn_id)
        return turn
    except Http404:
        pass
    group = request.GET.get("group", "")
    if group and not (group.isascii() and group.isdigit()):
        raise Http404("No such group")  # as the discussion page answers it
    group_id = int(group) if group else None
    return get_card_for_discussion(request.user, study, role, turn_id, group_id).turn


@login_required
@require_GET
def card_diff(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    study, role = get_study_for_user(request.user, slug)
    turn = _get_turn_for_user(request, study, role, turn_id)
    view = request.GET.get("view", "split")
    if view not in VIEWS:
        return HttpResponseBadRequest(
            f"Unknown view {view!r} in ?view=: choose split or unified.", content_type="text/plain"
        )
    against = request.GET.get("against", "")
    if against and not (against.isascii() and against.isdigit() and int(against) < turn.index):
        return HttpResponseBadRequest(
            f"?against= must name an earlier turn (1 to {turn.index - 1}), not {against!r}.",
            content_type="text/plain",
        )
    earlier = Turn.objects.filter(
        conversation_id=turn.conversation_id, index__lt=turn.index
    ).values_list("index", "reply_text")
    diffs = diff_reply(turn.reply_text, turn.index, earlier, int(against) if against else None)
    for d in diffs:  # a link per other earlier turn with comparable code, in this view
        d.other_links = [(t, _url(request, view=view, against=t)) for t in d.others]
    other = "unified" if view == "split" else "split"
    ctx = {"turn": turn, "diffs": diffs, "view": view, "against": against}
    ctx.update(other_view=VIEWS[other], other_url=_url(request, view=other))
    ctx["closest_url"] = _url(request, view=view, against=None)
    return render(request, "annotation/_diff.html", ctx)


def _url(request: HttpRequest, **params) -> str:
    """This partial's URL with `params` set (None: dropped), the rest of the query kept."""
    query = request.GET.copy()
    for key, value in params.items():
        query.pop(key, None)
        if value is not None:
            query[key] = value
    return f"{request.path}?{query.urlencode()}"
