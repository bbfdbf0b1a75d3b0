from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from annotation import conversation_keys, messages, plaintext, rendering
from annotation.forms import CONFIDENCE

register = template.Library()


@register.filter
def message_html(text: str) -> SafeString:
    """Conversation text (Markdown, hostile) as sanitized HTML: annotation/rendering.py; cut
    past the display limit (annotation/messages.py), with no link to the full text."""
    return messages.shown_html(text or "")


@register.filter
def preview(text: str, limit: int = 90) -> str:
    """A message's start as plain text for a list row: Markdown markers removed (links and
    images to their text), on one line, at most `limit` characters (annotation/plaintext)."""
    return plaintext.preview(text or "", int(limit))


@register.simple_tag
def confidence_points(form, mine) -> list[tuple[str, str, bool]]:
    """The confidence scale's radios: (value, label, checked), "not given" first; checked as
    the form posted back (a refused submit) or else as the user's saved label `mine`. With no
    confidence none is checked (the form then posts none: not given), so a card nobody has
    labelled has no checked input at all."""
    if form:
        current = str(form.data.get("confidence") or "")
    else:
        current = str(mine.confidence) if mine and mine.confidence else ""
    points = [("", "not given")] + [(str(i), f"{i} {word}") for i, word in CONFIDENCE.items()]
    return [(value, text, bool(value) and value == current) for value, text in points]


@register.simple_tag(takes_context=True)
def message(context, text: str, index: int, part: str) -> SafeString:
    """A message of the page's conversation (turn `index`, `part` user, reply or system),
    cut past the display limit with a link to its full text under the page's own access
    (the context's `text_view`, annotation/messages.text_view)."""
    url = messages.text_url(context.get("text_view"), index, part)
    return messages.shown_html(text or "", url)


@register.filter
def reply_part(part: dict) -> rendering.ReplyPart:
    """A tool call, tool result or reasoning block kept beside the reply: its kind, tool, one
    line and rendered body (templates/annotation/_reply_part.html shows it folded)."""
    return rendering.reply_part(part)


@register.filter
def reply_sequence(turn) -> list[rendering.ReplyItem]:
    """A turn's reply text and parts in the order they happened (rendering.reply_sequence)."""
    return rendering.reply_sequence(turn)


@register.filter
def key_short(key: str, limit: int = 48) -> str:
    """A conversation's key cut to `limit` characters in the middle, keeping the suffix that
    tells two conversations with one external id apart (`…~2`): conversation_keys."""
    return conversation_keys.shortened(key or "", int(limit))


@register.filter
def judges_episodes(counts) -> bool:
    """Whether one of the moderation queue's groups ((group, counts) pairs) judges episodes:
    the queue then shows its Episodes tab (views/episode_moderation.py)."""
    return any(group.unit == "episode" for group, _ in counts)
