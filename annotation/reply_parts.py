"""The stored text of a turn's reply parts, for a quote: which kind a part is (thinking,
tool_call, tool_result) and what text the card shows of it. A leaf shared by the card's
evidence (annotation/evidence.py) and the episodes' quotes (annotation/episodes/parts.py)."""

from __future__ import annotations

import json
from typing import Any

from .rendering import KIND_OF  # raw part kinds of the importers -> the kind a quote names

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
