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
  rows read for Parquet."""

from __future__ import annotations

import base64
import gzip
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

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
# Rows per Parquet batch: a WildChat row is ~10 kB, a SWE-chat session row a few kB.
PARQUET_BATCH_ROWS = 256
# What a gzip stream that is corrupt or cut off raises while it is read.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


class GzipError(OSError):
    """A gzip file that cannot be decompressed to the end; the message says why."""


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_binary(path: str | Path):
    """The file's bytes, decompressed when it is gzip (by magic bytes)."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def disk_position(f, fallback: int) -> int:
    """Bytes of the file on disk read so far: for gzip the compressed position (what the
    progress total counts), else `fallback` (the caller's own count)."""
    if isinstance(f, gzip.GzipFile) and f.fileobj is not None:
        return f.fileobj.tell()
    return fallback


def gzip_error(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the gzip stream is cut off (the file looks truncated)"
    return f"the gzip stream is corrupt ({exc})"


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
            with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as src:
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
