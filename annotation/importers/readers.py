"""Streaming readers: JSONL line by line, JSON arrays element by element. Neither holds more
than one record (plus a read-ahead chunk) in memory, whatever the file size.

Both yield `Item`s: a parsed object, or the error that stopped it from parsing, with its
position (line number for JSONL, index for arrays) and how many bytes were read so far."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNK_SIZE = 1 << 16
# A single array element larger than this is treated as broken JSON rather than read on
# until the end of the file, so a corrupt array cannot pull a whole file into memory.
MAX_RECORD_CHARS = 256 * 1024 * 1024

_WHITESPACE = " \t\n\r"


@dataclass
class Item:
    line: int | None  # 1-based line number (JSONL)
    index: int | None  # 0-based element index (JSON array)
    obj: Any = None
    error: str | None = None
    offset: int = 0  # bytes read from the file so far, for progress


def read_jsonl(path: str | Path) -> Iterator[Item]:
    with open(path, "rb") as f:
        offset = 0
        for number, raw in enumerate(f, 1):
            offset += len(raw)
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
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                cut = "" if raw.endswith(b"\n") else " (the last line looks cut off)"
                reason = f"invalid JSON: {exc.msg} at column {exc.colno}{cut}"
                yield Item(number, None, error=reason, offset=offset)
                continue
            yield Item(number, None, obj=obj, offset=offset)


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

    def more(self, at_least: int = 0) -> bool:
        """Read another chunk (at least `at_least` bytes); False at end of file."""
        if self.eof:
            return False
        data = self.f.read(max(self.chunk_size, at_least))
        self.offset += len(data)
        text = self.decoder.decode(data, final=not data)
        if not data:
            self.eof = True
        # Drop what was consumed, so the buffer is one record plus one chunk at most.
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(data)

    def skip_ws(self) -> str:
        """The next non-blank character ('' at end of file), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""


def _is_real_error(exc: json.JSONDecodeError, buffered: int) -> bool:
    """True when the error cannot be the buffer ending mid-record: the decoder met a bad
    character well before the end of the data it had. Unterminated strings only say where
    the string began, so they always get more data."""
    return exc.pos < buffered - 16 and not exc.msg.startswith("Unterminated string")


def read_json_array(path: str | Path, chunk_size: int = CHUNK_SIZE) -> Iterator[Item]:
    """Yield the elements of a top-level JSON array one by one (json.JSONDecoder.raw_decode
    over a sliding buffer). A syntax error ends the file: after it there is no reliable
    way to find where the next element starts. Elements before it are kept."""
    decoder = json.JSONDecoder()
    with open(path, "rb") as f:
        stream = _ArrayStream(f, chunk_size)
        try:
            first = stream.skip_ws()
        except UnicodeDecodeError as exc:
            yield Item(None, 0, error=f"not valid UTF-8 ({exc.reason})")
            return
        if first != "[":
            yield Item(None, 0, error="not a JSON array (does not start with '[')")
            return
        stream.pos += 1
        index = 0
        try:
            if stream.skip_ws() == "]":
                return
            while True:
                while True:
                    try:
                        obj, end = decoder.raw_decode(stream.buf, stream.pos)
                        # A value that ends exactly at the end of the buffer (a number) may
                        # continue in the next chunk.
                        if end < len(stream.buf) or stream.eof:
                            break
                        stream.more()
                    except json.JSONDecodeError as exc:
                        pending = len(stream.buf) - stream.pos
                        if (
                            _is_real_error(exc, len(stream.buf))
                            or pending > MAX_RECORD_CHARS
                            or not stream.more(at_least=pending)
                        ):
                            cut = " (the file looks cut off)" if stream.eof else ""
                            yield Item(
                                None,
                                index,
                                error=f"invalid JSON: {exc.msg}{cut}",
                                offset=stream.offset,
                            )
                            return
                stream.pos = end
                yield Item(None, index, obj=obj, offset=stream.offset)
                index += 1
                sep = stream.skip_ws()
                if sep == "]":
                    return
                if sep != ",":
                    found = "end of file (the file looks cut off)" if sep == "" else repr(sep)
                    yield Item(
                        None,
                        index,
                        error=f"invalid JSON: expected ',' or ']' after element, found {found}",
                        offset=stream.offset,
                    )
                    return
                stream.pos += 1
                stream.skip_ws()
        except UnicodeDecodeError as exc:
            yield Item(None, index, error=f"not valid UTF-8 ({exc.reason})", offset=stream.offset)


def read_items(path: str | Path, container: str) -> Iterator[Item]:
    if container == "array":
        return read_json_array(path)
    return read_jsonl(path)
