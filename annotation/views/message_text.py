"""The full text of a message that a page shows cut (annotation/messages.py), as text/plain,
one view per page that links to it and under exactly that page's access: the card's
(its annotators), the discussion's (get_card_for_discussion: its annotators once round 1
is over, its moderator, the study's leads) and the lead's conversation browser (leads).
A message is named by the turn's index in the card's conversation and its part (system,
user, reply); a card reaches its own turn and the turns before it, as its page does."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..access import get_card_for_annotator, get_card_for_discussion, get_study_for_user, lead_page
from ..messages import full_text, text_response
from ..models import Conversation, Study, Turn
from .shared.groups import group_param


def _message(request: HttpRequest, turn: Turn, index: int, part: str) -> HttpResponse:
    if index < 1 or index > turn.index:
        raise Http404("No such message")
    conversation = turn.conversation
    text = full_text(conversation, index, part)
    return text_response(request, text, f"{conversation.key}-turn-{index}-{part}")


@login_required
@require_GET
def card_text(request: HttpRequest, slug: str, turn_id: int, index: int, part: str):
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    return _message(request, turn, index, part)


@login_required
@require_GET
def discussion_text(request: HttpRequest, slug: str, turn_id: int, index: int, part: str):
    study, role = get_study_for_user(request.user, slug)
    card = get_card_for_discussion(request.user, study, role, turn_id, group_param(request))
    return _message(request, card.turn, index, part)


@lead_page
@require_GET
def conversation_text(
    request: HttpRequest, study: Study, conversation_id: int, index: int, part: str
) -> HttpResponse:
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    text = full_text(conversation, index, part)
    return text_response(request, text, f"{conversation.key}-turn-{index}-{part}")
