"""Claude Code session logs (`~/.claude/projects/<project>/<sessionId>.jsonl`), FORMATS.md
section 7a: one file is one session, so one conversation.

Only a human prompt starts a turn: a `user` line that is not `isMeta`, not `isSidechain`, and
whose content does not start with a `tool_result` block. Tool calls, tool results, thinking
and sub-agent traffic go to the reply as parts. The lines of one assistant message
(`message.id`) are merged; unknown line types are ignored; a bad line is reported as
`file:line: reason` and the rest of the session is kept."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from . import modality
from .base import Message, Record, RecordError, parse_timestamp
from .readers import checked_lines, typed_object_problem

NAME = "claude-code"
UNIQUE_IDS = True  # sessionId
WHOLE_FILE = True
CONTAINERS = ("jsonl",)

_KEPT_ENVELOPE = ("cwd", "gitBranch", "version")


def record_id(obj) -> None:
    return None


def parse_file(path: str | Path, short: str) -> tuple[Record, list[tuple[int, str]]]:
    errors: list[tuple[int, str]] = []
    lines: list[tuple[Any, int, dict]] = []  # (sort time, line number, line)
    record = Record(external_id="", messages=[], metadata={})
    last_time: Any = datetime.min
    seen_uuids: set[str] = set()
    for number, obj in checked_lines(path, _line_problem, errors):
        if obj["type"] == "summary" and isinstance(obj.get("summary"), str):
            record.metadata.setdefault("title", obj["summary"])
        if obj["type"] not in ("user", "assistant"):
            continue  # bookkeeping: snapshots, queue operations, system lines, ...
        if obj.get("uuid") in seen_uuids:
            continue  # a line written twice (resumed sessions copy their history)
        if obj.get("uuid"):
            seen_uuids.add(obj["uuid"])
        stamp = _sort_time(obj.get("timestamp"))
        if stamp is None:
            if obj.get("timestamp") is not None:
                record.warnings.append(f"line {number}: unreadable timestamp {obj['timestamp']!r}")
            stamp = last_time
        last_time = stamp
        lines.append((stamp, number, obj))
    lines.sort(key=lambda entry: (entry[0], entry[1]))  # by time, then append order
    _fill(record, [obj for _, _, obj in lines], short)
    modality.record(record.metadata, "Claude Code", modality.CLI)  # a CLI, whatever it ran
    return record, errors


def _line_problem(obj: Any) -> str | None:
    if problem := typed_object_problem(obj):
        return problem
    if obj["type"] in ("user", "assistant"):
        message = obj.get("message")
        if not isinstance(message, dict):
            return "field 'message' is missing or not an object"
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            return f"message.content is a {type(content).__name__}, not a string or list"
    return None


def _sort_time(value: Any):
    try:
        iso = parse_timestamp(value)
    except ValueError:
        return None
    return None if iso is None else datetime.fromisoformat(iso).replace(tzinfo=None)


def _fill(record: Record, lines: list[dict], short: str) -> None:
    by_message_id: dict[str, Message] = {}
    sidechain_only = bool(lines)
    for obj in lines:
        if not record.external_id and isinstance(obj.get("sessionId"), str):
            record.external_id = obj["sessionId"]
        for key in _KEPT_ENVELOPE:
            if obj.get(key) is not None:
                record.metadata.setdefault(key, obj[key])
        sidechain = obj.get("isSidechain") is True
        sidechain_only = sidechain_only and sidechain
        message = obj["message"]
        if obj["type"] == "user":
            if obj.get("isMeta") is True:
                continue  # harness-injected text (the local-command caveat, ...)
            record.messages.append(_user(obj, message, sidechain))
            continue
        merged = by_message_id.get(message.get("id")) if message.get("id") else None
        if merged is None:
            merged = Message(role="assistant")
            if message.get("model"):
                merged.metadata["model"] = message["model"]
            if message.get("id"):
                by_message_id[message["id"]] = merged
            record.messages.append(merged)
        _add_assistant_blocks(merged, message.get("content"), sidechain)
    if sidechain_only:
        raise RecordError("only sub-agent (sidechain) lines: a sub-agent's log, not a session")
    if not record.external_id:
        record.external_id = Path(short).stem
        record.id_from_data = False


def _blocks(content: Any) -> list:
    if content is None:
        return []
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text") or "")
    return f"[{block.get('type', 'block')}]"  # an image, a document


def _user(obj: dict, message: dict, sidechain: bool) -> Message:
    blocks = _blocks(message.get("content"))
    first = blocks[0] if blocks else None
    tool_results = isinstance(first, dict) and first.get("type") == "tool_result"
    if not sidechain and not tool_results:
        text = "\n".join(t for t in (_block_text(b) for b in blocks) if t)
        prompt = Message(role="user", content=text)
        if obj.get("timestamp"):
            prompt.metadata["timestamp"] = obj["timestamp"]
        return prompt
    parts = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            part = {"type": "tool_result", "content": block.get("content")}
            for key in ("tool_use_id", "is_error"):
                if block.get(key) is not None:
                    part[key] = block[key]
            parts.append(part)
        elif _block_text(block):
            parts.append({"type": "sidechain" if sidechain else "text", "role": "user",
                          "content": _block_text(block)})  # fmt: skip
    return Message(role="tool", parts=parts)


def _add_assistant_blocks(message: Message, content: Any, sidechain: bool) -> None:
    texts = [message.content] if message.content else []
    for block in _blocks(content):
        part = _assistant_part(block, sidechain)
        if part is None:
            text = _block_text(block)
            if text and text not in texts:
                # the text's place among the message's parts, so the card keeps the order
                offset = len(message.content) + 2 if message.content else 0
                message.text_at.append((offset, len(message.parts)))
                texts.append(text)
                message.content = "\n\n".join(texts)
        elif part not in message.parts:  # a block written twice is shown once
            message.parts.append(part)
    message.content = "\n\n".join(texts)


def _assistant_part(block: Any, sidechain: bool) -> dict | None:
    """A block that goes beside the reply's text, or None for the reply's own text."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return {"type": "thinking", "content": block.get("thinking") or "[redacted]"}
    if kind in ("tool_use", "server_tool_use"):
        arguments = block.get("input")
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": None if arguments is None else json.dumps(arguments, ensure_ascii=False),
        }
    if sidechain and kind == "text":
        return {"type": "sidechain", "role": "assistant", "content": block.get("text") or ""}
    return None
