"""LMSYS-Chat-1M, FORMATS.md section 2: one conversation a record, OpenAI-style
`{content, role}` messages with no per-message metadata. `conversation_id` is unique (the
release de-duplicates on it), so a repeated one is rejected."""

from __future__ import annotations

from typing import Any

from .base import Record, RecordError, require_id
from .wildchat import convert_conversation, declared_turns

NAME = "lmsys"
UNIQUE_IDS = True


def record_id(obj: Any) -> str | None:
    if isinstance(obj, dict) and obj.get("conversation_id") is not None:
        return str(obj["conversation_id"])
    return None


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    record = Record(
        external_id=require_id(obj, "conversation_id"),
        messages=[],
        declared_turns=declared_turns(obj),
    )
    record.messages = convert_conversation(obj, record, keep_message_metadata=False)
    record.metadata = {k: v for k, v in obj.items() if k != "conversation"}
    return record
