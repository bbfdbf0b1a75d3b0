"""Containers beyond plain JSON: Parquet (how the Hugging Face datasets ship) and gzip.

- **gzip** is recognised by its magic bytes (1f 8b), never by the name alone: an upload is
  stored under a temporary name. JSONL and JSON arrays are decompressed as they are read
  (memory stays flat); Parquet, whose footer is at the end, is first decompressed to a
  temporary file (`seekable_copy`), read, and the copy deleted.
- **Parquet** is read with `ParquetFile.iter_batches`, a few hundred rows at a time, so
  memory holds one batch (plus the row group pyarrow decodes it from), whatever the file
  size. Each row becomes a JSON-like dict (timestamps as ISO-8601 text, bytes as text) and
  goes through the same checks as a JSON record. Rows are numbered from 0, as pandas and the
  Hugging Face viewer number them: errors read `file.parquet row 17: reason`.
- Progress is in bytes of the file on disk: the compressed bytes read for gzip, the share of
  rows read for Parquet.
- **Limits** (docs/configuration.md): a gzip stream is never decompressed past
  CARDSORT_MAX_DECOMPRESSED_BYTES (default 20 times the upload limit), to memory or to disk:
  reading on raises DecompressedTooLarge, one of GZIP_ERRORS, naming the limit. `lines` reads
  a file line by line in bounded pieces: a line longer than CARDSORT_MAX_LINE_BYTES (default
  64 MB) is skipped to its end, a chunk at a time, and given as a LongLine, never held whole
  (a 2 MB gzip may hold a 2 GiB line)."""

from __future__ import annotations

import base64
import gzip
import io
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
# Rows per Parquet batch: a WildChat row is ~10 kB, a SWE-chat session row a few kB.
PARQUET_BATCH_ROWS = 256
# Defaults of the settings (docs/configuration.md).
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
DECOMPRESSED_PER_UPLOAD = 20
# How much of a line too long to keep is read at a time while it is skipped.
SKIP_CHUNK = 1 << 20


class GzipError(OSError):
    """A gzip file that cannot be decompressed to the end; the message says why."""


class DecompressedTooLarge(GzipError):
    """A gzip stream that decompresses to more than CARDSORT_MAX_DECOMPRESSED_BYTES."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the file decompresses to more than {limit:,} bytes "
            "(CARDSORT_MAX_DECOMPRESSED_BYTES); the rest of it is not read"
        )


# What a gzip stream that is corrupt, cut off or too large raises while it is read.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, DecompressedTooLarge)


def max_line_bytes() -> int:
    """The longest line (or JSON array element) read, in bytes (read at each call: tests
    override the setting)."""
    return int(getattr(settings, "CARDSORT_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES))


def max_decompressed_bytes() -> int:
    """The most a gzip file is decompressed to: the setting, else 20 times the upload limit."""
    from ..uploads import max_upload_bytes

    limit = getattr(settings, "CARDSORT_MAX_DECOMPRESSED_BYTES", None)
    return int(limit) if limit else DECOMPRESSED_PER_UPLOAD * max_upload_bytes()


def line_too_long(limit: int) -> str:
    """The reason given for a line over the limit."""
    return f"line longer than {limit:,} bytes (CARDSORT_MAX_LINE_BYTES)"


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


class _Inflated(io.RawIOBase):
    """A gzip file's decompressed bytes, up to `limit`: reading past it raises
    DecompressedTooLarge."""

    def __init__(self, path: str | Path, limit: int) -> None:
        self.gz = gzip.open(path, "rb")
        self.limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.count > self.limit:
            raise DecompressedTooLarge(self.limit)
        n = self.gz.readinto(buffer)
        self.count += n
        if self.count > self.limit:
            raise DecompressedTooLarge(self.limit)
        return n

    def compressed_position(self) -> int | None:
        fileobj = self.gz.fileobj
        return None if fileobj is None else fileobj.tell()

    def close(self) -> None:
        if not self.closed:
            self.gz.close()
        super().close()


def open_binary(path: str | Path):
    """The file's bytes, decompressed when it is gzip (by magic bytes), up to
    max_decompressed_bytes()."""
    if not is_gzip(path):
        return open(path, "rb")
    return io.BufferedReader(_Inflated(path, max_decompressed_bytes()), buffer_size=1 << 16)


def disk_position(f, fallback: int) -> int:
    """Bytes of the file on disk read so far: for gzip the compressed position (what the
    progress total counts), else `fallback` (the caller's own count)."""
    raw = getattr(f, "raw", None)
    if isinstance(raw, _Inflated):
        position = raw.compressed_position()
        if position is not None:
            return position
    return fallback


def gzip_error(exc: BaseException) -> str:
    if isinstance(exc, DecompressedTooLarge):
        return str(exc)
    if isinstance(exc, EOFError):
        return "the gzip stream is cut off (the file looks truncated)"
    return f"the gzip stream is corrupt ({exc})"


class LongLine:
    """A line `lines` skipped: longer than the limit. `size`: its bytes, line ending too."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


def lines(f, limit: int | None = None) -> Iterator[bytes | LongLine]:
    """The lines of a binary file, each with its line ending; a line longer than `limit`
    (default max_line_bytes(), not counting its ending) is read on to its end a chunk at a
    time and dropped: it comes as a LongLine, so memory holds at most `limit` bytes of it."""
    limit = max_line_bytes() if limit is None else limit
    while True:
        line = f.readline(limit + 2)  # the limit and a line ending ("\r\n")
        if not line:
            return
        if line.endswith(b"\n"):
            ending = 2 if line.endswith(b"\r\n") else 1
            yield line if len(line) - ending <= limit else LongLine(len(line))
            continue
        if len(line) <= limit:  # the last line, with no ending
            yield line
            continue
        size = len(line)
        while True:
            chunk = f.readline(SKIP_CHUNK)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield LongLine(size)


@contextmanager
def seekable_copy(path: str | Path) -> Iterator[Path]:
    """The path itself, or for a gzip file a decompressed temporary copy (deleted after):
    for readers that need to seek (Parquet's footer, a second pass by offsets)."""
    if not is_gzip(path):
        yield Path(path)
        return
    fd, name = tempfile.mkstemp(prefix="cardsort-import-", suffix=".bin")
    try:
        try:
            # up to max_decompressed_bytes() (and one chunk): never a disk filled by a bomb
            with os.fdopen(fd, "wb") as out, open_binary(path) as src:
                shutil.copyfileobj(src, out, 1 << 20)
        except GZIP_ERRORS as exc:
            raise GzipError(gzip_error(exc)) from None
        yield Path(name)
    finally:
        os.unlink(name)


def jsonable(value: Any) -> Any:
    """A value pyarrow's to_pylist gives, as JSON would hold it (so the record is the same
    record a JSON export of the table gives, and fits a JSONField)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): jsonable(v) for k, v in value}  # a Parquet map column
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and value != value:
        return None  # NaN: what pandas writes for a missing value
    return value


def parquet_file(path: str | Path):
    import pyarrow.parquet as pq

    return pq.ParquetFile(path)


def parquet_file_columns(path: str | Path) -> list[str]:
    """The top-level column names of a Parquet file, gzip-compressed too."""
    with seekable_copy(path) as plain:
        return list(parquet_file(plain).schema_arrow.names)


def parquet_error(exc: BaseException) -> str:
    return f"not a readable Parquet file ({exc})"


def read_parquet_rows(
    path: str | Path, columns: list[str] | None = None, batch_rows: int | None = None
) -> Iterator[tuple[int, dict, int]]:
    """(row number, row as a JSON-like dict, progress in bytes) for every row of a plain
    (not gzip) Parquet file."""
    batch_rows = batch_rows or PARQUET_BATCH_ROWS
    pf = parquet_file(path)
    total_rows = pf.metadata.num_rows or 1
    size = os.path.getsize(path)
    row = 0
    for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
        for obj in batch.to_pylist():
            yield row, {str(k): jsonable(v) for k, v in obj.items()}, (row + 1) * size // total_rows
            row += 1
