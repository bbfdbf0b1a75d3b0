"""ShareGPT / Vicuna style, FORMATS.md section 4: a JSON array (FastChat) or JSONL (axolotl)
of `{"id", "conversations": [{"from", "value"}]}`, optionally with `system` and `tools`
(LLaMA-Factory) and `model` (FastChat)."""

from __future__ import annotations

from typing import Any

from .base import Message, Record, RecordError, require_list

NAME = "sharegpt"
UNIQUE_IDS = True

ROLE_MAP = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "system": "system",
    # LLaMA-Factory: the agent's tool call and the tool's output, both the reply's tool side.
    "function_call": "tool",
    "observation": "tool",
}
PART_TYPES = {"function_call": "tool_call", "observation": "tool_result"}


def record_id(obj: Any) -> str | None:
    return str(obj["id"]) if isinstance(obj, dict) and obj.get("id") is not None else None


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    messages: list[Message] = []
    system = obj.get("system")
    if isinstance(system, str) and system:
        messages.append(Message(role="system", content=system))
    for i, raw in enumerate(require_list(obj, "conversations")):
        where = f"conversations[{i}]"
        if not isinstance(raw, dict):
            raise RecordError(f"{where} is a {type(raw).__name__}, not an object")
        sender = raw.get("from")
        role = ROLE_MAP.get(sender)
        if role is None:
            raise RecordError(f"{where}: unknown role from={sender!r}")
        value = raw.get("value")
        if value is not None and not isinstance(value, str):
            raise RecordError(f"{where}.value is a {type(value).__name__}, not a string")
        message = Message(role=role, content=value or "", missing=value is None)
        if sender in PART_TYPES:
            message.parts = [{"type": PART_TYPES[sender], "content": message.content}]
        messages.append(message)
    metadata = {k: v for k, v in obj.items() if k not in ("id", "conversations", "system")}
    has_id = obj.get("id") is not None
    if has_id and (isinstance(obj["id"], bool) or not isinstance(obj["id"], str | int)):
        raise RecordError("field 'id' is not a string")
    return Record(
        external_id=str(obj["id"]) if has_id else fallback_id,
        messages=messages,
        metadata=metadata,
        id_from_data=has_id,
    )
