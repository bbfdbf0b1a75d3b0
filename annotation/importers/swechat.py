"""SWE-chat (SALT-NLP/SWE-chat), FORMATS.md section 7c: the `conversations` table, one row
per transcript entry, as Parquet or a JSON/JSONL export.

One conversation per `session_id`, its rows ordered by `turn_number` (then by their place
in the file). Each `user_prompt` row starts a turn; `assistant_response` rows are the reply's
text; `tool_use`, `tool_result` and `thinking` rows go into the reply as parts (`tool_call`,
`tool_result`, `thinking`, the shapes annotation/rendering.py folds on the card). A row
with `is_conversational` false, or role `metadata` / `progress` (or turn_type `progress`),
is skipped and counted in the conversation's `skipped_rows`.

The rows of one session need not be adjacent in the file. Grouping them:
- **JSONL**: a first pass reads each line's `session_id` and keeps, per session, the byte
  offsets and line numbers of its lines (16 bytes a row: ~45 MB for the 2.69M rows of the
  full table); a second pass reads each session's lines by seeking to them, so the text in
  memory is one session's. A gzip file is first decompressed to a temporary file, as
  seeking needs.
- **Parquet / JSON array**: a first pass reads only the `session_id` column (every element
  of an array) and notes the last row of each session; the second pass reads the rows in
  order and hands a session on at its last row. The text in memory is the rows of the
  sessions still open at that point: one session when the table is grouped by session, up
  to every conversational row when it is shuffled.
The conversations come in the order their sessions first appear (JSONL) or end (the
others)."""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import modality
from .base import Message, Record, RecordError
from .containers import (
    GzipError,
    LongLine,
    line_too_long,
    lines,
    max_line_bytes,
    parquet_error,
    parquet_file,
    seekable_copy,
)
from .readers import disk_size
from .readers import read_items as read_rows
from .records import BadRecord, Item, parse_record

NAME = "swechat"
UNIQUE_IDS = True

SKIPPED_ROLES = ("metadata", "progress")
SESSION_KEYS = ("agent", "model", "user_id", "repo_id")
TURN_KEYS = ("turn_id", "turn_number", "timestamp", "prompt_intent", "prompt_pushback")
CALL_KEYS = ("command", "file_path", "pattern", "bash_category")


def record_id(obj: Any) -> str | None:
    if isinstance(obj, dict) and obj.get("session_id") is not None:
        return str(obj["session_id"])
    return None


# --- grouping rows into sessions -------------------------------------------------------------


def read_items(path: str | Path, container: str, options: dict) -> Iterator[Item]:
    """One Item per session: obj = {"session_id", "at": "line"|"index"|"row", "rows":
    [(position, row), ...]}, positioned at the session's first row. Rows that name no
    session are Items of their own, with their error."""
    if container == "jsonl":
        yield from _jsonl_sessions(path)
    else:
        yield from _buffered_sessions(path, container)


def _session_of(obj: Any) -> tuple[str | None, str | None]:
    """(session id, None) or (None, the reason the row names no session)."""
    if not isinstance(obj, dict):
        return None, f"row is a {type(obj).__name__}, not an object"
    value = obj.get("session_id")
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None, "field 'session_id' is missing or not a string"
    return str(value), None


def _skipped(row: dict) -> bool:
    return (
        row.get("is_conversational") is False
        or row.get("role") in SKIPPED_ROLES
        or row.get("turn_type") == "progress"
    )


def _session_item(session: str, at: str, rows: list, skipped: int, offset: int) -> Item:
    first = rows[0][0] if rows else None
    obj = {"session_id": session, "at": at, "rows": rows, "skipped_rows": skipped}
    item = Item(None, None, obj=obj, offset=offset)
    setattr(item, {"line": "line", "index": "index", "row": "row"}[at], first)
    return item


def _jsonl_sessions(path: str | Path) -> Iterator[Item]:
    size = disk_size(path)
    with seekable_copy(path) as plain, open(plain, "rb") as f:
        index = yield from _index_lines(f, size, max(disk_size(plain), 1))
        total = sum(len(a) for a in index.values()) // 2 or 1
        done = 0
        while index:
            session = next(iter(index))
            places = index.pop(session)  # not needed again: give its offsets back
            rows, skipped = [], 0
            for i in range(0, len(places), 2):
                f.seek(places[i])
                number = places[i + 1]
                # bounded too: only a file changed since the first pass has a longer line
                obj, error = _parse_line(f.readline(max_line_bytes() + 2), number)
                if error is not None:  # the file changed between the passes
                    yield Item(number, None, error=error)
                elif _skipped(obj):
                    skipped += 1
                else:
                    rows.append((number, obj))
            done += len(places) // 2
            offset = size // 2 + size * done // total // 2
            yield _session_item(session, "line", rows or [(places[1], None)], skipped, offset)


def _index_lines(f, size: int, plain_size: int):
    """First pass: {session: array of (byte offset, line number) pairs}; yields an error
    Item for each line that names no session."""
    index: dict[str, array] = {}
    start = 0
    limit = max_line_bytes()
    for number, raw in enumerate(lines(f, limit), 1):
        if isinstance(raw, LongLine):  # skipped, never held: not indexed either
            start += raw.size
            yield Item(
                number, None, error=line_too_long(limit), offset=size * start // plain_size // 2
            )
            continue
        here, start = start, start + len(raw)
        if not raw.strip():
            continue
        obj, error = _parse_line(raw, number)
        session = None
        if error is None:
            session, error = _session_of(obj)
        if error is not None:
            yield Item(number, None, error=error, offset=size * start // plain_size // 2)
            continue
        index.setdefault(session, array("q")).extend((here, number))
    return index


def _parse_line(raw: bytes, number: int) -> tuple[Any, str | None]:
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        return parse_record(text.rstrip("\r\n")), None
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 at byte {exc.start + 1}"
    except BadRecord as exc:
        return None, str(exc)


def _buffered_sessions(path: str | Path, container: str) -> Iterator[Item]:
    at = "row" if container == "parquet" else "index"
    try:
        last = _last_positions(path, container)
    except GzipError:
        raise  # the whole file is unreadable: the importer names it
    except (OSError, ValueError) as exc:
        yield Item(None, None, error=parquet_error(exc), row=0)
        return
    open_sessions: dict[str, tuple[list, list[int]]] = {}
    items = read_rows(path, container)
    try:
        for item in items:
            position = item.row if at == "row" else item.index
            if item.error is not None:
                yield item
                continue
            session, error = _session_of(item.obj)
            if error is not None:
                item.error, item.obj = error, None
                yield item
                continue
            rows, skipped = open_sessions.setdefault(session, ([], [0]))
            if _skipped(item.obj):
                skipped[0] += 1
            else:
                rows.append((position, item.obj))
            if last.get(session) == position:
                del open_sessions[session]
                rows = rows or [(position, None)]
                yield _session_item(session, at, rows, skipped[0], item.offset)
    finally:
        items.close()
    # Rows the first pass did not see (the file changed in between): still hand them on.
    for session, (rows, skipped) in open_sessions.items():
        if rows:
            yield _session_item(session, at, rows, skipped[0], 0)


def _last_positions(path: str | Path, container: str) -> dict[str, int]:
    """Each session's last row (index in an array): where the second pass hands it on."""
    last: dict[str, int] = {}
    if container == "parquet":
        with seekable_copy(path) as plain:
            pf = parquet_file(plain)
            if "session_id" not in pf.schema_arrow.names:
                return last  # every row then fails on its missing session_id
            row = 0
            for batch in pf.iter_batches(batch_size=65536, columns=["session_id"]):
                for value in batch.column(0).to_pylist():
                    if value is not None:
                        last[str(value)] = row
                    row += 1
        return last
    items = read_rows(path, container)
    try:
        for item in items:
            session, _ = _session_of(item.obj) if item.error is None else (None, None)
            if session is not None:
                last[session] = item.index
    finally:
        items.close()
    return last


# --- one session as a conversation ---------------------------------------------------------


def parse(obj: Any, fallback_id: str) -> Record:
    session = obj["session_id"]
    at = obj["at"]
    rows = [(position, row) for position, row in obj["rows"] if row is not None]
    record = Record(external_id=session, messages=[])
    ordered = sorted(rows, key=lambda pr: (_turn_number(pr[1], _place(at, pr[0])), pr[0]))
    metadata: dict[str, Any] = {"session_id": session}
    for position, row in ordered:
        place = _place(at, position)
        for key in SESSION_KEYS:
            if row.get(key) is not None:
                metadata.setdefault(key, row[key])
        record.messages.append(_message(row, place, record))
    metadata["rows"] = len(rows)
    metadata["skipped_rows"] = obj.get("skipped_rows", 0)
    # the session's source says where it ran (an IDE or a CLI), else the agent's name does
    source = next((r["source"] for _, r in ordered if r.get("source")), None)
    modality.record(metadata, metadata.get("agent"), modality.of_tool(source))
    if source:
        metadata["source"] = source
    record.metadata = metadata
    if not any(m.role == "user" for m in record.messages):
        first = _place(at, obj["rows"][0][0])
        raise RecordError(f"session {session!r} has no user_prompt row: nothing to sort", **first)
    return record


def _place(at: str, position: int) -> dict:
    return {at: position}


def _turn_number(row: dict, place: dict) -> int:
    value = row.get("turn_number")
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)  # pandas writes integer columns with nulls as floats
        raise RecordError(f"field 'turn_number' is {_kind(value)}, not an integer", **place)
    return value


def _kind(value: Any) -> str:
    return "missing" if value is None else f"{value!r}"


def _text(row: dict, key: str, place: dict) -> tuple[str, bool]:
    value = row.get(key)
    if value is None:
        return "", True
    if not isinstance(value, str):
        raise RecordError(f"field {key!r} is a {type(value).__name__}, not a string", **place)
    return value, False


def _message(row: dict, place: dict, record: Record) -> Message:
    kind = row.get("turn_type")
    if not isinstance(kind, str) or not kind:
        raise RecordError("field 'turn_type' is missing or not a string", **place)
    content, missing = _text(row, "content", place)
    if kind == "user_prompt":
        metadata = {k: row[k] for k in TURN_KEYS if row.get(k) is not None}
        if "timestamp" in metadata:
            where = _where(place)
            metadata["timestamp"] = record.timestamp(f"{where}.timestamp", metadata["timestamp"])
        return Message("user", content, missing=missing, metadata=metadata)
    if kind == "assistant_response":
        return Message("assistant", content, missing=missing)
    if kind == "tool_use":
        call: dict[str, Any] = {"type": "tool_call", "name": row.get("tool_name")}
        call["arguments"] = _arguments(row)
        call.update({k: row[k] for k in CALL_KEYS if row.get(k) is not None})
        return Message("assistant", "", parts=[call])
    if kind == "tool_result":
        result: dict[str, Any] = {"type": "tool_result", "content": content}
        if row.get("tool_name") is not None:
            result["name"] = row["tool_name"]
        return Message("tool", "", parts=[result])
    if kind == "thinking":
        return Message("assistant", "", parts=[{"type": "thinking", "content": content}])
    record.warnings.append(
        f"{_where(place)}: turn_type {kind!r} is not a known one; kept in the reply as a part"
    )
    return Message("assistant", "", parts=[{"type": kind, "content": content}])


def _where(place: dict) -> str:
    ((at, position),) = place.items()
    return {"line": f"line {position}", "index": f"[{position}]", "row": f"row {position}"}[at]


def _arguments(row: dict) -> Any:
    """The call's input: `tool_input_json` (JSON text, shown parsed by the card), else what
    the row has of it (`command`, `file_path`, `pattern`)."""
    value = row.get("tool_input_json")
    if value not in (None, ""):
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    found = {k: row[k] for k in ("command", "file_path", "pattern") if row.get(k) is not None}
    return json.dumps(found, ensure_ascii=False) if found else None
