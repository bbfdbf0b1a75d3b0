"""WildChat (allenai/WildChat-1M, -1M-Full, -4.8M, and legacy allenai/WildChat v1),
FORMATS.md section 1, re-exported as JSONL (or a JSON array).

`conversation_hash` is NOT unique (identical content, identical hash): records sharing one
are all imported, and it is never used as a key."""

from __future__ import annotations

from typing import Any

from .base import Message, Record, RecordError, require_list, role_message, text_content

NAME = "wildchat"
UNIQUE_IDS = False

ROLE_MAP = {"user": "user", "assistant": "assistant", "system": "system"}


def record_id(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    value = obj.get("conversation_hash", obj.get("conversation_id"))
    return str(value) if value is not None else None


def convert_conversation(
    obj: dict, record: Record, keep_message_metadata: bool, field: str = "conversation"
) -> list[Message]:
    """The `conversation` list of WildChat and LMSYS (WildBench's `conversation_input`):
    `{content, role, ...}` utterances."""
    messages = []
    for i, raw in enumerate(require_list(obj, field)):
        where = f"{field}[{i}]"
        message = role_message(raw, where, ROLE_MAP, text_content)
        if keep_message_metadata:
            for key, value in raw.items():
                if key in ("content", "role") or value is None:
                    continue
                if key in ("timestamp", "created"):
                    value = record.timestamp(f"{where}.{key}", value)
                message.metadata[key] = value
        messages.append(message)
    return messages


def declared_turns(obj: dict) -> int | None:
    value = obj.get("turn")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    key = "conversation_hash" if "conversation_hash" in obj else "conversation_id"
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise RecordError("field 'conversation_hash' (or 'conversation_id') is missing")
    record = Record(external_id=str(value), messages=[], declared_turns=declared_turns(obj))
    record.messages = convert_conversation(obj, record, keep_message_metadata=True)
    metadata = {k: v for k, v in obj.items() if k != "conversation"}
    if "timestamp" in metadata:
        metadata["timestamp"] = record.timestamp("timestamp", metadata["timestamp"])
    record.metadata = metadata
    return record
