"""The browser tests' helpers: conversations with metadata in the shapes the importers store
(WildChat, LMSYS, native), and readers of the pages (which conversations a result page
lists, one card and one group of the conversation page)."""

from __future__ import annotations

import re

from django.db import connection
from django.urls import reverse

from annotation.db.textsearch import PG_INDEXES
from annotation.models import Conversation, Turn
from tests.factories import make_conversation


def browse_url(slug: str = "s1") -> str:
    return reverse("lead_browse", args=[slug])


def conversation_url(conversation: Conversation, slug: str = "s1") -> str:
    return reverse("lead_conversation", args=[slug, conversation.pk])


def listed(response) -> set[str]:
    """The external ids of the conversations a result page lists."""
    assert response.status_code == 200, response.status_code
    ids = [int(pk) for pk in re.findall(r'data-conversation-id="(\d+)"', response.text)]
    return set(Conversation.objects.filter(pk__in=ids).values_list("external_id", flat=True))


def options(response, field: str) -> list[str]:
    """The values a select of the filter form offers (the empty "any" choice aside)."""
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', response.text, re.S)
    assert select, f"no select {field!r}"
    return [v for v in re.findall(r'<option value="([^"]*)"', select[1]) if v]


def make_browsable(
    study,
    external_id: str,
    *,
    n_turns: int = 3,
    groups=(),
    source: str = "native",
    metadata: dict | None = None,
    turn_metadata: dict | None = None,
    texts: dict[int, tuple[str, str]] | None = None,
) -> Conversation:
    """A conversation with its source format, conversation metadata, the same metadata on
    every turn (`turn_metadata`) and some turns' (user, reply) texts replaced."""
    conversation = make_conversation(study, external_id, n_turns=n_turns)
    Conversation.objects.filter(pk=conversation.pk).update(
        source_format=source, metadata=metadata or {}
    )
    for group in groups:
        Conversation.objects.filter(pk=conversation.pk).assign(group)
    if turn_metadata:
        conversation.turns.update(metadata=turn_metadata)
    for index, (user, reply) in (texts or {}).items():
        Turn.objects.filter(conversation=conversation, index=index).update(
            user_text=user, reply_text=reply
        )
    conversation.refresh_from_db()
    return conversation


def card_html(response, index: int) -> str:
    """The part of the page that shows card `index`."""
    assert response.status_code == 200
    cards = re.split(r'(?=<section class="browse-card")', response.text)
    found = [c for c in cards if f'id="turn-{index}"' in c[:200]]
    assert len(found) == 1, f"card {index} not found once"
    return found[0]


def group_html(card: str, group) -> str:
    """The row of one group in a card's table of states."""
    match = re.search(rf'<tr data-group="{group.pk}".*?</tr>', card, re.S)
    assert match, f"no row for group {group.name}"
    return match[0]


def refresh_index_statistics() -> None:
    """PostgreSQL: the trigram indexes and the planner's statistics as after a vacuum and an
    analyze (the rows out of the indexes' pending lists), so that a plan is the one a
    settled study gets."""
    with connection.cursor() as cursor:
        for name in PG_INDEXES:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [name])
        cursor.execute("ANALYZE annotation_turn")
        cursor.execute("ANALYZE annotation_conversation")
