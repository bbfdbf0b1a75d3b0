"""A JSON array of records read as a stream (readers.read_items, container "array"): one
element at a time, each parsed and checked like a JSONL line (readers.parse_record's rules),
in bounded memory whatever the file's size: an element longer than CARDSORT_MAX_LINE_BYTES
ends the file with an error naming the limit, and a broken element is skipped to the next."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .containers import (
    GZIP_ERRORS,
    disk_position,
    gzip_error,
    max_line_bytes,
    open_binary,
)
from .records import (
    BLANKS,
    CHUNK_SIZE,
    TOO_DEEP,
    TOO_MANY_DIGITS,
    Item,
    json_error,
    record_problem,
)


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
            self.pos = BLANKS.match(self.buf, self.pos).end()
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


def read_json_object(path: str | Path, chunk_size: int = CHUNK_SIZE) -> Iterator[Item]:
    """The one record of a file holding one JSON object over many lines (a pretty-printed
    export, container "object"), read as an array's element is: bounded by
    CARDSORT_MAX_LINE_BYTES, its errors naming the line and column of the file."""
    decoder = json.JSONDecoder()
    with open_binary(path) as f:
        stream = _ArrayStream(f, chunk_size)
        try:
            if stream.skip_ws() != "{":
                raise _Stop("not a JSON object (does not start with '{')")
            item = _element(stream, decoder, 0)
            yield item
            if item.error is None and stream.skip_ws() != "":
                raise _Stop(f"invalid JSON: extra data after the object at {stream.at(stream.pos)}")
        except _Stop as exc:
            yield Item(None, 0, error=str(exc), offset=stream.offset)


def starts_one_object(head: str, whole: bool = False) -> bool:
    """Whether a file that starts with "{" holds one object over many lines rather than JSON
    lines, from `head`, the file's start (`whole`: the file itself, nothing cut): its first
    line is no whole JSON value, and the text reads on as one value past its first two lines
    (to its end, or to where `head` is cut). A JSON line that is broken fails on its own
    line, or, cut short, on the next line's start (`{"a": 1` then `{"b": 2}`): those stay
    JSON lines, each error named by its line. An error near the end of a whole file is not a
    cut: the file ends there."""
    lines = head.split("\n", 2)
    if len(lines) < 2:
        return False  # one line as long as the head: a JSON line (or one cut short)
    try:
        json.loads(lines[0])
        return False  # a whole value on the first line: JSON lines
    except ValueError:
        pass
    two_lines = len(lines[0]) + 1 + len(lines[1])
    try:
        _, end = json.JSONDecoder().raw_decode(head)
    except json.JSONDecodeError as exc:
        cut = not whole and len(lines) > 2 and _may_be_cut(exc, head)
        return exc.pos > two_lines or cut
    except ValueError:
        return False
    return end > len(lines[0])


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
