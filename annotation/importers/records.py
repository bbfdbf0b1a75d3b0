"""One record of a JSON file: parsed, and checked that it can be stored (not nested deeper
than MAX_DEPTH, no NUL character), with errors fit for `file:line: reason`. Every reader
(readers.py, json_array.py) and the label import parse records with these rules."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from .fastjson import loads as fast_loads

CHUNK_SIZE = 1 << 16

BLANKS = re.compile(r"[ \t\n\r]*")
# Deeper records are rejected. No chat log comes close, and Python's JSON code (json.loads,
# json.dumps, Django's JSONField) raises RecursionError somewhere below 1,000 levels,
# depending on how deep the call stack already is: a fixed limit well under that makes the
# same record import or fail the same way everywhere.
MAX_DEPTH = 100
TOO_DEEP = f"the record is nested deeper than {MAX_DEPTH} levels"
NUL = "contains a NUL character (\\u0000), which the database cannot store"
TOO_MANY_DIGITS = f"invalid JSON: a number of more than {sys.get_int_max_str_digits():,} digits"


@dataclass
class Item:
    line: int | None  # 1-based line number (JSONL)
    index: int | None  # 0-based element index (JSON array)
    obj: Any = None
    error: str | None = None
    offset: int = 0  # bytes read from the file so far, for progress
    row: int | None = None  # 0-based row number (Parquet)


class BadRecord(ValueError):
    """The text is no usable record; the message is the reason, fit for `file:line: reason`."""


class BadJSON(BadRecord):
    """The text is not JSON at all."""


def json_error(
    exc: json.JSONDecodeError, line: int | None = None, column: int | None = None
) -> str:
    """`invalid JSON: <what> at column C`, or `at line L, column C` when the caller knows
    where in the file the decoded text is (a JSONL reader names the line itself)."""
    # "Unterminated string starting at", "Invalid control character at": the position
    # follows, so their trailing "at" would be doubled.
    what = exc.msg.removesuffix(" at")
    column = exc.colno if column is None else column
    where = f"column {column}" if line is None else f"line {line}, column {column}"
    return f"invalid JSON: {what} at {where}"


def parse_record(text: str) -> Any:
    """One JSONL line (without its line ending, so columns are right) as a checked record;
    raises BadRecord. Shared by the conversation and the annotation importers."""
    try:
        obj = fast_loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(json_error(exc)) from None
    except RecursionError:
        raise BadRecord(TOO_DEEP) from None
    except ValueError:  # Python's int() refuses a number of more than 4,300 digits
        raise BadJSON(TOO_MANY_DIGITS) from None
    problem = record_problem(obj, text)
    if problem is not None:
        raise BadRecord(problem)
    return obj


def record_problem(obj: Any, text: str, start: int = 0, end: int | None = None) -> str | None:
    """Why a parsed record cannot be stored, or None. `text[start:end]` is its JSON text:
    cheap scans of it spare walking the records that cannot have the problem."""
    end = len(text) if end is None else end
    # Each level opens a bracket, so a record with few brackets cannot be too deep.
    if text.count("[", start, end) + text.count("{", start, end) > MAX_DEPTH and _too_deep(obj):
        return TOO_DEEP
    # In JSON text a NUL can only be written as the escape \u0000. PostgreSQL refuses it in
    # text and jsonb columns while SQLite stores it: rejecting it on every database keeps
    # one study's data the same wherever it lives, and keeps the text as the dataset has it.
    if text.find("\\u0000", start, end) != -1:
        field = _nul_field(obj, "")
        if field is not None:
            return f"{field or 'the record'}: {NUL}"
    return None


def _too_deep(obj: Any) -> bool:
    # Level by level, with list comprehensions: twice as fast as a stack of (value, depth)
    # pairs, and this runs on most records of a real dataset.
    if type(obj) is not dict and type(obj) is not list:
        return False
    level = [obj]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for value in level
            for child in (value.values() if type(value) is dict else value)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False
    return True


def _nul_field(value: Any, path: str) -> str | None:
    """The path of the first string holding a NUL (`messages[0].content`), else None.
    Recursive: only called on records no deeper than MAX_DEPTH."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, child in value.items():
            if "\x00" in key:
                return f"{path or 'the record'} (key {key!r})"
            found = _nul_field(child, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found = _nul_field(child, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def row_problem(obj: Any) -> str | None:
    """record_problem for a record that has no JSON text (a Parquet row)."""
    if _too_deep(obj):
        return TOO_DEEP
    field = _nul_field(obj, "")
    return None if field is None else f"{field or 'the record'}: {NUL}"
