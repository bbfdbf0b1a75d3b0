"""cardsort's own JSONL: `{"id": str, "messages": [{"role", "content"}], "metadata": {...}}`,
one conversation a line. Messages take OpenAI's shape (roles, content parts, tool calls)."""

from __future__ import annotations

from typing import Any

from .base import Record, RecordError, require_id, require_list
from .openai import convert_message

NAME = "native"
UNIQUE_IDS = True


def record_id(obj: Any) -> str | None:
    return str(obj["id"]) if isinstance(obj, dict) and obj.get("id") is not None else None


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    external_id = require_id(obj, "id")
    messages = [convert_message(m, i) for i, m in enumerate(require_list(obj, "messages"))]
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RecordError("field 'metadata' is not an object")
    return Record(external_id=external_id, messages=messages, metadata=dict(metadata))
