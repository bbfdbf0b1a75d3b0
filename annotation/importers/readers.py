"""Streaming readers: JSONL line by line, JSON arrays element by element, Parquet a batch of
rows at a time, each gzip-compressed too (containers.py). None holds more than one record
(plus a read-ahead chunk or batch) in memory, whatever the file size.

Both yield `Item`s: a parsed object, or the error that stopped it from parsing or storing
(bad JSON, nested too deep, a NUL character), with its position (line number for JSONL,
index for arrays) and how many bytes were read so far. Error messages name the column, and
in arrays the line, of the file."""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from .fastjson import loads as fast_loads

CHUNK_SIZE = 1 << 16

_BLANKS = re.compile(r"[ \t\n\r]*")
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


class _Stop(Exception):
    """An error in an array file after which no element can be found reliably; the message
    is the reason."""


class _ArrayStream:
    """A sliding text buffer over a binary file: only the unread tail is kept."""

    def __init__(self, f, chunk_size: int) -> None:
        self.f = f
        self.chunk_size = chunk_size
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf = ""
        self.pos = 0
        self.offset = 0
        self.eof = False
        # Where buf[0] is in the file, so an error can name its line and column.
        self.line = 1
        self.column = 1
        self.bad_bytes = ""  # the UTF-8 error ahead of the buffer's end, if any
        self.gzip_problem = ""  # a corrupt or cut-off gzip stream ends the file here
        # An element longer than this (a line's limit) is refused rather than read on until
        # the end of the file, so a corrupt or hostile array cannot pull it into memory.
        self.limit = max_line_bytes()

    def more(self, at_least: int = 0) -> bool:
        """Read another chunk (at least `at_least` bytes); False at end of file."""
        if self.bad_bytes:
            raise _Stop(self.bad_bytes)
        if self.eof:
            return False
        try:
            data = self.f.read(max(self.chunk_size, at_least))
        except GZIP_ERRORS as exc:
            # what was decompressed before the damage is still read
            data, self.gzip_problem = b"", gzip_error(exc)
        self.offset = disk_position(self.f, self.offset + len(data))
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            # exc.object is the undecoded bytes up to what was just read
            byte = self.offset - len(exc.object) + exc.start + 1
            self.bad_bytes = f"not valid UTF-8 at byte {byte} of the file ({exc.reason})"
            # The elements before the bad byte are still read; the error stops the reader
            # only when it needs what comes after.
            text = exc.object[: exc.start].decode("utf-8")
        if not data:
            self.eof = True
        if self.gzip_problem and not data:
            raise _Stop(self.gzip_problem)
        # Drop what was consumed, so the buffer is one record plus one chunk at most.
        self._forget(self.pos)
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(data)

    def _forget(self, n: int) -> None:
        """Move the file position of buf[0] past the n characters about to be dropped."""
        newlines = self.buf.count("\n", 0, n)
        if newlines:
            self.line += newlines
            self.column = n - self.buf.rfind("\n", 0, n)
        else:
            self.column += n

    def where(self, i: int) -> tuple[int, int]:
        """(line, column) in the file of buf[i], both 1-based."""
        newlines = self.buf.count("\n", 0, i)
        if not newlines:
            return self.line, self.column + i
        return self.line + newlines, i - self.buf.rfind("\n", 0, i)

    def at(self, i: int) -> str:
        line, column = self.where(i)
        return f"line {line}, column {column}"

    def skip_ws(self) -> str:
        """The next non-blank character ('' at end of file), not consumed."""
        while True:
            self.pos = _BLANKS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""


# A string that runs to the end of the text: no closing quote that is not escaped.
_OPEN_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+\\?', re.S)
# The longest token a decode error can stop inside: -Infinity, an escaped surrogate pair.
_LONGEST_TOKEN = 16


def _may_be_cut(exc: json.JSONDecodeError, text: str) -> bool:
    """True when the error may only mean that `text` ends mid-record, so that more text can
    fix it. Told from where the error is, never from its wording (which is the Python
    version's): a token cut by the end fails within its last few characters (`tru`, `-`,
    `\\u00`), and a string cut by the end fails where it starts, with no closing quote after.
    A real error at a string that is still open reads on until the string closes."""
    return exc.pos >= len(text) - _LONGEST_TOKEN or (
        text.startswith('"', exc.pos) and _OPEN_STRING.fullmatch(text, exc.pos) is not None
    )


def read_json_array(path: str | Path, chunk_size: int = CHUNK_SIZE) -> Iterator[Item]:
    """Yield the elements of a top-level JSON array one by one (json.JSONDecoder.raw_decode
    over a sliding buffer). A syntax error ends the file: after it there is no reliable
    way to find where the next element starts. Elements before it are kept. Errors name
    the line and column of the file."""
    decoder = json.JSONDecoder()
    with open_binary(path) as f:
        stream = _ArrayStream(f, chunk_size)
        index = 0
        try:
            if stream.skip_ws() != "[":
                raise _Stop("not a JSON array (does not start with '[')")
            stream.pos += 1
            if stream.skip_ws() != "]":
                while True:
                    yield _element(stream, decoder, index)
                    index += 1
                    if _separator(stream) == "]":
                        break
            stream.pos += 1
            if stream.skip_ws() != "":
                # say, two arrays one after the other: the second must not vanish unseen
                raise _Stop(
                    f"invalid JSON: extra data after the closing ']' at {stream.at(stream.pos)}"
                )
        except _Stop as exc:
            yield Item(None, index, error=str(exc), offset=stream.offset)


def _element(stream: _ArrayStream, decoder: json.JSONDecoder, index: int) -> Item:
    """The element at stream.pos, which is left just after it."""
    try:
        obj, end = _decode(stream, decoder)
    except RecursionError:
        line = stream.where(stream.pos)[0]
        end = _skip_container(stream)
        if end is None:
            raise _Stop(f"{TOO_DEEP} (line {line}); the file looks cut off") from None
        stream.pos = end
        return Item(None, index, error=f"{TOO_DEEP} (line {line})", offset=stream.offset)
    problem = record_problem(obj, stream.buf, stream.pos, end)
    if problem is not None:
        # The index names the element; its line finds it in a pretty-printed file.
        item = Item(None, index, error=f"{problem} (line {stream.where(stream.pos)[0]})")
    else:
        item = Item(None, index, obj=obj)
    item.offset = stream.offset
    stream.pos = end
    return item


def _decode(stream: _ArrayStream, decoder: json.JSONDecoder) -> tuple[Any, int]:
    """(value, end index) of the value at stream.pos, reading on while it is incomplete."""
    while True:
        try:
            obj, end = decoder.raw_decode(stream.buf, stream.pos)
            # A value that ends exactly at the end of the buffer (a number) may continue
            # in the next chunk.
            if end < len(stream.buf) or stream.eof:
                return obj, end
            if end - stream.pos > stream.limit:
                raise _Stop(_too_long(stream))
            stream.more()
        except json.JSONDecodeError as exc:
            pending = len(stream.buf) - stream.pos
            # from the element's start: more() moves the element to the buffer's start
            error_at = exc.pos - stream.pos
            may_be_cut = _may_be_cut(exc, stream.buf)
            if may_be_cut and pending > stream.limit:
                raise _Stop(_too_long(stream)) from None
            # read as much again (so that decoding again costs O(n log n) in all), but never
            # much past the limit
            if not may_be_cut or not stream.more(at_least=min(pending, stream.limit + 1 - pending)):
                cut = " (the file looks cut off)" if stream.eof else ""
                where = stream.where(stream.pos + error_at)
                raise _Stop(json_error(exc, *where) + cut) from None
        except ValueError:  # not a JSONDecodeError: a number int() refuses
            raise _Stop(f"{TOO_MANY_DIGITS} (line {stream.where(stream.pos)[0]})") from None


def _too_long(stream: _ArrayStream) -> str:
    line = stream.where(stream.pos)[0]
    return (
        f"an element longer than {stream.limit:,} bytes (CARDSORT_MAX_LINE_BYTES) starts at "
        f"line {line}; the rest of the file is not read"
    )


def _separator(stream: _ArrayStream) -> str:
    """Consume the ',' between two elements (and the blanks after it), or find the ']'."""
    sep = stream.skip_ws()
    if sep == "]":
        return sep
    if sep != ",":
        found = "end of file" if sep == "" else repr(sep)
        cut = " (the file looks cut off)" if sep == "" else ""
        raise _Stop(
            f"invalid JSON: expected ',' or ']' after element, found {found} "
            f"at {stream.at(stream.pos)}{cut}"
        )
    stream.pos += 1
    stream.skip_ws()
    return sep


_STRUCTURE = re.compile(r'["\[\]{}]')
_STRING_END = re.compile(r'["\\]')


def _skip_container(stream: _ArrayStream) -> int | None:
    """The end of the array or object at stream.pos, found by counting brackets outside
    strings: for an element too deep for the decoder, so the ones after it are still read.
    None when the file ends first (or the element outgrows the limit)."""
    depth = 0
    in_string = False
    i = stream.pos
    while True:
        buf = stream.buf
        match = (_STRING_END if in_string else _STRUCTURE).search(buf, i)
        if match is None or (match.group() == "\\" and match.end() >= len(buf)):
            # Read on; an escape cut by the chunk boundary is looked at again.
            resume = (len(buf) if match is None else match.start()) - stream.pos
            if len(buf) - stream.pos > stream.limit or not stream.more():
                return None
            i = stream.pos + resume
            continue
        char = match.group()
        i = match.end()
        if in_string:
            if char == "\\":
                i += 1  # the escaped character, whatever it is
            else:
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i


def row_problem(obj: Any) -> str | None:
    """record_problem for a record that has no JSON text (a Parquet row)."""
    if _too_deep(obj):
        return TOO_DEEP
    field = _nul_field(obj, "")
    return None if field is None else f"{field or 'the record'}: {NUL}"


def read_parquet(path: str | Path, columns: list[str] | None = None) -> Iterator[Item]:
    """The rows of a Parquet file (gzip-compressed too) as Items numbered by row. A file
    pyarrow cannot open, or a batch it cannot decode, ends the file with one error."""
    size = _disk_size(path)
    row = 0
    try:
        with seekable_copy(path) as plain:
            scale = size / max(_disk_size(plain), 1)
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


def _disk_size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_items(path: str | Path, container: str) -> Iterator[Item]:
    if container == "array":
        return read_json_array(path)
    if container == "parquet":
        return read_parquet(path)
    return read_jsonl(path)
