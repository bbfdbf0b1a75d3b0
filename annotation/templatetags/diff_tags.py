"""The card's one question about code across turns: may its reply hold a code block (the
diff button shows)? A regular-expression search, never a parse or a diff: the card renders
fast, and the diff comes on demand (views/diff.py)."""

from __future__ import annotations

from django import template

from annotation.codediff import has_code as _has_code

register = template.Library()


@register.filter
def has_code(text: str) -> bool:
    return _has_code(text or "")
