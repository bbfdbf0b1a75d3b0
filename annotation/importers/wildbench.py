"""WildBench (allenai/WildBench), FORMATS.md section 3: configs v2, v2-hard and v1-legacy,
as Parquet or a JSON/JSONL export.

- `session_id` is the id (v1-legacy's int `id` is the fallback when it is absent).
- `conversation_input` is a WildChat history that ends with the query to be answered, so the
  last turn has no reply (`reply_missing`).
- `references` (`{"gpt-4": ...}`) is a reference answer to that query: it is kept in the
  conversation's metadata under `references`, never used as the reply.
- `checklist`, `intent`, `primary_tag`, `secondary_tags` (and v1-legacy's `appropriate`,
  v2-hard's `avg_score` / `var_score`) are kept in the metadata as they are.
- `length` is kept and checked, never trusted: its unit (turns or messages) is not
  documented, so a value that is neither the counted turns nor the counted messages gives a
  warning."""

from __future__ import annotations

from typing import Any

from .base import Record, RecordError, require_list
from .wildchat import ROLE_MAP, convert_conversation

NAME = "wildbench"
UNIQUE_IDS = True


def record_id(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    value = obj.get("session_id", obj.get("id"))
    return None if value is None else str(value)


def _external_id(obj: dict) -> str:
    for key in ("session_id", "id"):
        value = obj.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return str(value)
    raise RecordError("field 'session_id' is missing or not a string")


def parse(obj: Any, fallback_id: str) -> Record:
    if not isinstance(obj, dict):
        raise RecordError(f"record is a {type(obj).__name__}, not an object")
    record = Record(external_id=_external_id(obj), messages=[])
    raw = require_list(obj, "conversation_input")
    # WildBench's utterances are WildChat's
    record.messages = convert_conversation(
        obj, record, keep_message_metadata=True, field="conversation_input"
    )
    _check_references(obj.get("references"))
    if record.messages and record.messages[-1].role != "user":
        record.warnings.append(
            "conversation_input does not end with the user query WildBench asks to answer "
            f"(last role {raw[-1].get('role')!r})"
        )
    _check_length(obj.get("length"), record)
    record.metadata = {k: v for k, v in obj.items() if k != "conversation_input"}
    return record


def _check_references(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise RecordError(f"field 'references' is a {type(value).__name__}, not an object")
    for model, answer in value.items():
        if answer is not None and not isinstance(answer, str):
            raise RecordError(f"field 'references.{model}' is not a string")


def _check_length(value: Any, record: Record) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        record.warnings.append(f"field 'length' is not an integer ({value!r}), kept as is")
        return
    messages = [m for m in record.messages if m.role in ROLE_MAP.values()]
    turns = sum(
        1
        for i, m in enumerate(messages)
        if m.role == "user" and (i == 0 or messages[i - 1].role != "user")
    )
    if value not in (turns, len(messages)):
        record.warnings.append(
            f"the dataset says length={value}, counted {turns} turns in {len(messages)} messages"
        )
