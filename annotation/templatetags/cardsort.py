from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from annotation import rendering

register = template.Library()


@register.filter
def message_html(text: str) -> SafeString:
    """Conversation text (Markdown, hostile) as sanitized HTML: annotation/rendering.py."""
    return rendering.message_html(text or "")


@register.filter
def reply_part(part: dict) -> rendering.ReplyPart:
    """A tool call, tool result or reasoning block kept beside the reply: its kind, tool, one
    line and rendered body (templates/annotation/_reply_part.html shows it folded)."""
    return rendering.reply_part(part)
