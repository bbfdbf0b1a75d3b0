"""Conversation text on the pages, kept to a size a browser renders at once: a message over
settings.CARDSORT_MESSAGE_DISPLAY_LIMIT characters is stored whole but shown cut there,
with a notice and, where the page gives one, a link to its full text as text/plain (the
card's, the discussion's and the lead's conversation page each serve it under the access
of the page itself). The earlier turns of a card come in windows of
settings.CARDSORT_CONTEXT_TURNS turns, the nearest first, each with a "Show earlier turns"
button for the window before it: a card deep in a long conversation does not send every
turn before it.

Why: a 5 MB message on one line is one text node of millions of characters. Chromium laid
that node out again at each step of parsing the page: 10.8 s of layout in 10 layouts for a
card whose message and reply were 5 MB each (a loaded machine; no script ran: Markdown and
highlighting are done on the server). Cut at 200,000 characters: 0.36 s. The full text, as
text/plain, is laid out once."""

from __future__ import annotations

import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from . import rendering
from .models import Conversation, Turn
from .rendering import cut, notice

PARTS = ("system", "user", "reply")


def shown_html(text: str, url: str = "") -> SafeString:
    """A message as the pages render it: Markdown (rendering.message_html), cut past the
    display limit with the notice and the link to `url`."""
    shown, was_cut = cut(text or "")
    html = rendering.message_html(shown)
    if not was_cut:
        return html
    return mark_safe(html + notice(len(text), url))


# -- the full text -----------------------------------------------------------------------


def full_text(conversation: Conversation, index: int, part: str) -> str:
    """A message of the conversation by turn index and part (system, user, reply)."""
    if part == "system":
        return conversation.system_prompt
    if part not in PARTS:
        raise Http404("No such message")
    turn = get_object_or_404(
        Turn.objects.only("user_text", "reply_text"), conversation=conversation, index=index
    )
    return turn.user_text if part == "user" else turn.reply_text


def text_response(request: HttpRequest, text: str, name: str) -> HttpResponse:
    """The full text as text/plain, shown by the browser's own plain-text viewer (no
    Markdown, no highlighting: one layout of the text, where the card's HTML took one per
    parsing step) and never sniffed as HTML; `?download=1` saves it instead."""
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:120]
    how = "attachment" if request.GET.get("download") else "inline"
    response["Content-Disposition"] = f'{how}; filename="{safe}.txt"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


# -- the earlier turns, a window at a time ---------------------------------------------------


def context_window(request: HttpRequest, turn: Turn, url: str) -> dict | HttpResponse:
    """The partial's context: the CARDSORT_CONTEXT_TURNS turns before `?before=` (by
    default the card's own turn), in order, and the URL of the window before them (None
    when they reach turn 1). A 400 names a bad `before`."""
    raw = request.GET.get("before", str(turn.index))
    try:
        before = int(raw)
    except ValueError:
        return HttpResponseBadRequest(f"before: {raw!r} is not a turn number")
    before = max(1, min(before, turn.index))
    first = max(1, before - settings.CARDSORT_CONTEXT_TURNS)
    earlier = Turn.objects.filter(
        conversation_id=turn.conversation_id, index__gte=first, index__lt=before
    ).order_by("index")
    return {
        "turn": turn,
        "earlier": earlier,
        "n_more": first - 1,
        "more_url": f"{url}{'&' if '?' in url else '?'}before={first}" if first > 1 else None,
    }


def text_view(name: str, *args, query: str = "") -> dict:
    """The template's way to the full text of a message on this page: the URL name of the
    page's own full-text view, its arguments before (index, part), and the page's query
    string (the discussion's ?group=)."""
    return {"text_view": (name, args, query)}


def text_url(text_view: tuple | None, index: int, part: str) -> str:
    if not text_view:
        return ""
    name, args, query = text_view
    return reverse(name, args=[*args, index, part]) + query
