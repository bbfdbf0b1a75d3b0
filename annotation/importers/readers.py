"""Streaming readers: JSONL line by line, JSON arrays element by element (json_array.py),
Parquet a batch of rows at a time, each gzip-compressed too (containers.py). None holds more
than one record (plus a read-ahead chunk or batch) in memory, whatever the file size.

Both yield `Item`s: a parsed object, or the error that stopped it from parsing or storing
(bad JSON, nested too deep, a NUL character), with its position (line number for JSONL,
index for arrays) and how many bytes were read so far. Error messages name the column, and
in arrays the line, of the file."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .containers import (
    GZIP_ERRORS,
    GzipError,
    LongLine,
    disk_position,
    gzip_error,
    line_too_long,
    lines,
    max_line_bytes,
    open_binary,
    parquet_error,
    read_parquet_rows,
    seekable_copy,
)
from .json_array import read_json_array, read_json_object
from .records import BadJSON, BadRecord, Item, parse_record, row_problem

T = TypeVar("T")


def read_jsonl(path: str | Path) -> Iterator[Item]:
    """The lines of a JSONL file as Items; a line longer than CARDSORT_MAX_LINE_BYTES is an
    error Item (containers.lines skips it without holding it)."""
    limit = max_line_bytes()
    with open_binary(path) as f:
        offset = 0
        number = 0
        read = lines(f, limit)
        while True:
            try:
                raw = next(read)
            except StopIteration:
                break
            except GZIP_ERRORS as exc:
                yield Item(number + 1, None, error=gzip_error(exc), offset=offset)
                break
            number += 1
            if isinstance(raw, LongLine):
                offset = disk_position(f, offset + raw.size)
                yield Item(number, None, error=line_too_long(limit), offset=offset)
                continue
            offset = disk_position(f, offset + len(raw))
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if not raw.strip():
                continue  # blank lines are ignored silently (FORMATS.md section 0)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Item(
                    number, None, error=f"not valid UTF-8 at byte {exc.start + 1}", offset=offset
                )
                continue
            try:
                # Without its line ending: with it, an error at the end of the line is
                # reported at "line 2, column 1" of the one-line text.
                obj = parse_record(text.rstrip("\r\n"))
            except BadRecord as exc:
                cut = isinstance(exc, BadJSON) and not raw.endswith(b"\n")
                reason = f"{exc} (the last line looks cut off)" if cut else str(exc)
                yield Item(number, None, error=reason, offset=offset)
                continue
            yield Item(number, None, obj=obj, offset=offset)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last one shorter), read as they are needed."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def typed_object_problem(obj: Any) -> str | None:
    """What is wrong with a session-log line that must be an object with a string "type"
    (Claude Code's, Codex's), or None."""
    if not isinstance(obj, dict):
        return f"the line is a {type(obj).__name__}, not an object"
    if not isinstance(obj.get("type"), str):
        return "field 'type' is missing or not a string"
    return None


def checked_lines(
    path: str | Path, check: Callable[[Any], str | None], errors: list[tuple[int, str]]
) -> Iterator[tuple[int, Any]]:
    """The JSON lines of a whole-file format (a session log) as (line number, object), for
    those `check` finds no problem with; each unreadable or refused line goes to `errors`
    as (line, reason). The file is closed when the caller stops early too."""
    items = read_jsonl(path)
    try:
        for item in items:
            if item.error is not None:
                errors.append((item.line, item.error))
                continue
            problem = check(item.obj)
            if problem:
                errors.append((item.line, problem))
                continue
            yield item.line, item.obj
    finally:
        items.close()


def read_parquet(path: str | Path, columns: list[str] | None = None) -> Iterator[Item]:
    """The rows of a Parquet file (gzip-compressed too) as Items numbered by row. A file
    pyarrow cannot open, or a batch it cannot decode, ends the file with one error."""
    size = disk_size(path)
    row = 0
    try:
        with seekable_copy(path) as plain:
            scale = size / max(disk_size(plain), 1)
            for row, obj, offset in read_parquet_rows(plain, columns):
                problem = row_problem(obj)
                offset = int(offset * scale)
                if problem is not None:
                    yield Item(None, None, error=problem, offset=offset, row=row)
                else:
                    yield Item(None, None, obj=obj, offset=offset, row=row)
                row += 1
    except GZIP_ERRORS as exc:
        yield Item(None, None, error=gzip_error(exc), offset=size, row=row)
    except GzipError as exc:
        yield Item(None, None, error=str(exc), offset=size, row=row)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        yield Item(None, None, error=parquet_error(exc), offset=size, row=row)


def disk_size(path: str | Path) -> int:
    """The file's size in bytes, 0 if it cannot be read (the reader then says why)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_items(path: str | Path, container: str) -> Iterator[Item]:
    if container == "array":
        return read_json_array(path)
    if container == "object":
        return read_json_object(path)
    if container == "parquet":
        return read_parquet(path)
    return read_jsonl(path)
