"""Which stored text an evidence quote lies in, and finding a quote there.

A turn's parts: `user` (Turn.user_text), `reply` (Turn.reply_text) and its reply parts
(Turn.reply_parts) of kind `thinking`, `tool_call` or `tool_result` (the importers' raw
kinds mapped as the card's rendering maps them). A reply part's text is what the card
shows of it, as stored: a thinking part's text; a tool call's arguments (text as given,
structured arguments as JSON indented by 2, as the card prints them); a tool result's
content (likewise). Offsets are [start, end) in Python characters of that text."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from ..rendering import KIND_OF  # raw part kinds of the importers -> the kind a quote names

PARTS = ("user", "reply", "thinking", "tool_call", "tool_result")
REPLY_PART_KINDS = ("thinking", "tool_call", "tool_result")


def kind_of(part: Any) -> str:
    """A reply part's kind: thinking, tool_call, tool_result, or other."""
    if not isinstance(part, dict):
        return "other"
    return KIND_OF.get(str(part.get("kind") or part.get("type") or ""), "other")


def _first(part: dict, *keys: str) -> Any:
    """The first of `keys` with a value that is not empty (None, "", [], {})."""
    for key in keys:
        value = part.get(key)
        if value or (value is not None and not isinstance(value, str | list | dict)):
            return value
    return None


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, dict) for b in value):
        # content blocks ([{"type": "text", "text": ...}]) by their text
        if all("type" in b for b in value):
            return "\n".join(
                b["text"] if isinstance(b.get("text"), str) else f"[{b.get('type')}]" for b in value
            )
    return json.dumps(value, indent=2, ensure_ascii=False)


def reply_part_text(part: Any) -> str:
    """The stored text of one reply part (see the module docstring)."""
    if not isinstance(part, dict):
        return _as_text(part)
    kind = kind_of(part)
    if kind == "tool_call":
        return _as_text(_first(part, "arguments", "input", "args", "command"))
    if kind == "thinking":
        return _as_text(_first(part, "thinking", "text", "content", "summary"))
    return _as_text(_first(part, "content", "output", "result", "text"))


def texts_of(part: str, user_text: str, reply_text: str, reply_parts: list) -> list:
    """[(part_index, text)] a quote of `part` may lie in: one text for user and reply
    (index None), every reply part of that kind for the others, in order."""
    if part == "user":
        return [(None, user_text)]
    if part == "reply":
        return [(None, reply_text)]
    return [(i, reply_part_text(p)) for i, p in enumerate(reply_parts or []) if kind_of(p) == part]


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """[start, end) of `quote` in `text`: exactly, else with white space normalised (each
    run of white space in the quote matches any run in the text, and the quote's leading and
    trailing white space is ignored), the span then being the stored text's, from the first
    to the last character matched. None when it is not there, or the quote is blank."""
    words = quote.split()
    if not words:
        return None
    at = text.find(quote)
    if at != -1:
        return at, at + len(quote)
    found = _spaced(tuple(words)).search(text)
    return None if found is None else (found.start(), found.end())


@lru_cache(maxsize=4096)
def _spaced(words: tuple[str, ...]) -> re.Pattern:
    """The words with any run of white space between them (a file repeats its quotes)."""
    return re.compile(r"\s+".join(map(re.escape, words)))
