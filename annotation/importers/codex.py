"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`), FORMATS.md
section 7b: one file is one session, every line `{timestamp, type, payload}`.

The text comes from the `event_msg` stream (`user_message`, `agent_message`,
`agent_reasoning`), the tool calls and their output from `response_item`s. The `response_item`
messages are skipped: they repeat the prompt and carry harness-injected context
(`<environment_context>`, AGENTS.md instructions) as role `user`. Rollouts written before
Codex had the event stream have only `response_item`s: then their messages are read, without
the injected ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import modality
from .base import Message, Record
from .readers import checked_lines, typed_object_problem

NAME = "codex-cli"
UNIQUE_IDS = True  # session_meta.id
WHOLE_FILE = True
CONTAINERS = ("jsonl",)

# How harness-injected `user` messages start (environment, AGENTS.md, user instructions).
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_META_KEPT = ("cwd", "originator", "cli_version", "git", "timestamp")


def record_id(obj) -> None:
    return None


def parse_file(path: str | Path, short: str) -> tuple[Record, list[tuple[int, str]]]:
    errors: list[tuple[int, str]] = []
    lines = list(checked_lines(path, _line_problem, errors))
    record = Record(external_id="", messages=[], metadata={})
    if lines and lines[0][1]["type"] != "session_meta":
        record.warnings.append(f"line {lines[0][0]} is not session_meta, as a rollout's should be")
    has_events = any(
        obj["type"] == "event_msg" and obj["payload"].get("type") == "user_message"
        for _, obj in lines
    )
    model = None
    for _, obj in lines:
        kind, payload = obj["type"], obj["payload"]
        if kind == "session_meta":
            _session_meta(record, payload)
        elif kind == "turn_context":
            model = payload.get("model") or model
        elif kind == "event_msg" and has_events:
            message = _event(payload, obj.get("timestamp"))
            if message is not None:
                record.messages.append(message)
        elif kind == "response_item":
            message = _response_item(payload, with_messages=not has_events)
            if message is not None:
                record.messages.append(message)
        else:
            continue
        if model and record.messages and record.messages[-1].role == "assistant":
            record.messages[-1].metadata.setdefault("model", model)
    if not record.external_id:
        record.external_id = Path(short).stem
        record.id_from_data = False
    return record, errors


def _line_problem(obj: Any) -> str | None:
    if problem := typed_object_problem(obj):
        return problem
    if not isinstance(obj.get("payload"), dict):
        return "field 'payload' is missing or not an object"
    return None


def _session_meta(record: Record, payload: dict) -> None:
    if not record.external_id and isinstance(payload.get("id"), str | int):
        record.external_id = str(payload["id"])
    for key in _META_KEPT:
        if payload.get(key) is not None:
            record.metadata.setdefault(key, payload[key])
    # Codex is a CLI; its editor extension writes originator `codex_vscode`
    ide = "vscode" in str(payload.get("originator") or "")
    modality.record(record.metadata, "Codex", modality.IDE if ide else modality.CLI)
    instructions = payload.get("instructions")
    if isinstance(instructions, str) and instructions.strip() and not record.messages:
        record.messages.append(Message(role="system", content=instructions))


def _event(payload: dict, timestamp: Any) -> Message | None:
    kind = payload.get("type")
    if kind == "user_message":
        message = Message(role="user", content=_text(payload.get("message")))
        if timestamp:
            message.metadata["timestamp"] = timestamp
        return message
    if kind == "agent_message":
        return Message(role="assistant", content=_text(payload.get("message")))
    if kind == "agent_reasoning":
        return Message(
            role="assistant", parts=[{"type": "thinking", "content": _text(payload.get("text"))}]
        )
    return None  # token counts, task started / complete, ...


def _response_item(payload: dict, with_messages: bool) -> Message | None:
    kind = payload.get("type")
    call_id = payload.get("call_id")
    if kind in ("function_call", "custom_tool_call"):
        arguments = payload.get("arguments" if kind == "function_call" else "input")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        part = {"type": "tool_call", "id": call_id, "name": payload.get("name"),
                "arguments": arguments}  # fmt: skip
        return Message(role="assistant", parts=[part])
    if kind == "local_shell_call":
        action = payload.get("action")
        part = {"type": "tool_call", "id": call_id, "name": "local_shell",
                "arguments": json.dumps(action, ensure_ascii=False)}  # fmt: skip
        return Message(role="assistant", parts=[part])
    if kind in ("function_call_output", "custom_tool_call_output"):
        part = {"type": "tool_result", "tool_call_id": call_id, "content": payload.get("output")}
        return Message(role="tool", parts=[part])
    if kind == "message" and with_messages:
        return _old_message(payload)
    return None  # reasoning (the event stream has it), messages, web searches, ...


def _old_message(payload: dict) -> Message | None:
    """A message of a rollout without the event stream; None for injected context."""
    role = payload.get("role")
    text = _text(payload.get("content"))
    if role == "user" and not text.lstrip().startswith(_INJECTED):
        return Message(role="user", content=text)
    if role == "assistant":
        return Message(role="assistant", content=text)
    return None  # developer / system messages, injected context


def _text(value: Any) -> str:
    """A string, or content parts (`input_text`, `output_text`) joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, dict):
                texts.append(str(part.get("text") or ""))
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(t for t in texts if t)
    return json.dumps(value, ensure_ascii=False)
