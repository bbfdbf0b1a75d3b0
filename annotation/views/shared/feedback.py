"""What a page says after a submit: that it was saved, and what (the labels in words, the card
they went on with a link back to it, the round). One wording for the htmx answer (shown in
the partial, role=status) and for the page that follows a native POST (a message, tagged
"saved", that base.html shows with role=status)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ...conversation_keys import shortened


def names(types: Iterable) -> str:
    """The types by name, in the order given, or "no smell"."""
    return ", ".join(t.name for t in types) or "no smell"


def labels_saved(slug: str, turn, types: Iterable) -> SafeString:
    """ "Saved: Code Rollback on conv-7 turn 3." with a link back to that card."""
    url = reverse("card", args=[slug, turn.pk])
    conversation = shortened(turn.conversation.key, 48)
    return format_html(
        'Saved: {} on <a href="{}">{} turn {}</a>.', names(types), url, conversation, turn.index
    )


def revision_saved(types: Iterable, round: int) -> str:
    return f"Saved: {names(types)} for round {round}."


def decided(types: Iterable) -> str:
    return f"Decided: {names(types)}."


def comment_sent(round: int) -> str:
    return f"Comment sent (round {round})."


def tell(request: HttpRequest, text: str) -> None:
    """For the page a native POST redirects to (base.html shows it with role=status)."""
    messages.success(request, text, extra_tags="saved")
