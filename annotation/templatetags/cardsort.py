from __future__ import annotations

import json
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# ``` or ~~~ fences, with an optional info string (language) after the opening fence
_FENCE = re.compile(r"^(```|~~~)[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^\1[ \t]*$|\Z)", re.M | re.S)


@register.filter
def message_html(text: str) -> SafeString:
    """Plain text with fenced code blocks as <pre><code>: whitespace kept, long lines scroll.
    Everything is escaped; no other markdown is interpreted (the conversation is data)."""
    if not text:
        return mark_safe("")
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        # the blank lines around a fence are the block's margin, not text
        out.append(f'<span class="prose">{escape(text[pos : m.start()].strip(chr(10)))}</span>')
        lang = escape(m.group(2))
        code = escape(m.group(3).rstrip("\n"))
        out.append(f'<pre data-lang="{lang}"><code>{code}</code></pre>')
        pos = m.end()
    out.append(f'<span class="prose">{escape(text[pos:].strip(chr(10)))}</span>')
    return mark_safe("".join(out))


@register.filter
def reply_part_summary(part: dict) -> str:
    """One line for a tool call, tool result or reasoning block kept beside the reply."""
    kind = part.get("kind") or part.get("type") or "part"
    name = part.get("name") or ""
    return f"{kind} {name}".strip()


@register.filter
def reply_part_body(part: dict) -> str:
    """What a folded part holds: a result's content, a call's arguments, else the whole part.
    Parts are data from the file, so any key may be missing (a call with no arguments)."""
    for key in ("content", "arguments", "text", "thinking"):
        value = part.get(key)
        if value:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(part, ensure_ascii=False)
