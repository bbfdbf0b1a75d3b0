"""OpenAI chat `messages` JSONL (fine-tuning / HF "conversational"), FORMATS.md section 5.
The records have no id: one is made from the file name and line number."""

from __future__ import annotations

import json
from typing import Any

from .base import Message, Record, RecordError, require_list, role_message

NAME = "openai"
UNIQUE_IDS = False

ROLE_MAP = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",  # deprecated predecessor of `tool`
}

# How non-text content parts are shown in the text.
PLACEHOLDERS = {"image_url": "[image]", "input_audio": "[audio]", "file": "[file]"}


def record_id(obj: Any) -> str | None:
    return None


def _part_text(part: Any, where: str) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        raise RecordError(f"{where} is a {type(part).__name__}, not an object")
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind == "refusal":
        return str(part.get("refusal") or "")
    if kind == "file":
        filename = (part.get("file") or {}).get("filename")
        return f"[file: {filename}]" if filename else "[file]"
    return PLACEHOLDERS.get(kind, f"[{kind}]")


def content_text(value: Any, where: str) -> tuple[str, bool]:
    """(text, missing): a string, or a list of parts whose text is concatenated and whose
    other parts (images, audio, files) become placeholders."""
    if value is None:
        return "", True
    if isinstance(value, str):
        return value, False
    if isinstance(value, list):
        texts = [_part_text(p, f"{where}.content[{i}]") for i, p in enumerate(value)]
        return "\n".join(t for t in texts if t), False
    raise RecordError(f"{where}.content is a {type(value).__name__}, not a string or list")


def _tool_calls(calls: Any, where: str) -> list[dict]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise RecordError(f"{where}.tool_calls is not a list")
    parts = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise RecordError(f"{where}.tool_calls[{i}] is not an object")
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str) and arguments is not None:
            arguments = json.dumps(arguments, ensure_ascii=False)
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": arguments,
            }
        )
    return parts


def convert_message(raw: Any, i: int, role_map: dict[str, str] = ROLE_MAP) -> Message:
    where = f"messages[{i}]"
    message = role_message(raw, where, role_map, content_text)
    role, text = message.role, message.content
    for key in ("name", "weight"):
        if raw.get(key) is not None:
            message.metadata[key] = raw[key]
    if isinstance(raw.get("metadata"), dict):
        message.metadata.update(raw["metadata"])
    if role == "assistant":
        message.parts = _tool_calls(raw.get("tool_calls"), where)
    elif role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "content": text}
        for key in ("tool_call_id", "name"):
            if raw.get(key) is not None:
                result[key] = raw[key]
        message.parts = [result]
    return message


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    raw_messages = require_list(obj, "messages")
    messages = [convert_message(m, i) for i, m in enumerate(raw_messages)]
    metadata = {k: v for k, v in obj.items() if k != "messages"}
    return Record(external_id=fallback_id, messages=messages, metadata=metadata, id_from_data=False)
