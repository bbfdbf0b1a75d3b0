"""The study file: gzipped JSON lines, one line a record.

    {"format": "cardsort-study", "version": 1, "study": SLUG, "migrations": {...}, ...}
    {"user": {"id": 3, "username": "alice", ...}}            users the study's rows name
    {"model": "taxonomy.Taxonomy", "fields": ["slug", ...]}  a block of one model's rows:
    [7, "interaction-smells", ...]                            id, then the fields' values
    ...                                                       (taxonomy first, then the
                                                              study's models in load order)
    {"file": "exports/12/gold.csv", "job": 12, "data": BASE64}  a job's file, in parts
    {"end": {"counts": {"annotation.Turn": 1234, ...}}}      what the loader must have read

Ids are the dumping database's; the loader gives every row a new id and remaps references.
Datetimes are ISO 8601 with their offset; JSON fields are JSON."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from django.db import connection, models
from django.db.migrations.recorder import MigrationRecorder

FORMAT = "cardsort-study"
VERSION = 1
APPS = ("taxonomy", "annotation")


class BackupError(Exception):
    """A dump or load that cannot go on; the message names the record and the field."""


def migration_state() -> dict[str, list[str]]:
    applied = MigrationRecorder(connection).applied_migrations()
    return {app: sorted(name for a, name in applied if a == app) for app in APPS}


def encode(value):
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value


def decoder(field: models.Field):
    """The function from a file value to the field's Python value."""
    if isinstance(field, models.DateTimeField):
        return lambda v: None if v is None else dt.datetime.fromisoformat(v)
    if isinstance(field, models.DateField):
        return lambda v: None if v is None else dt.date.fromisoformat(v)
    if isinstance(field, models.TimeField):
        return lambda v: None if v is None else dt.time.fromisoformat(v)
    return None


class Writer:
    def __init__(self, stream) -> None:
        self._gz = gzip.GzipFile(fileobj=stream, mode="wb", compresslevel=5)
        self._text = io.TextIOWrapper(self._gz, encoding="utf-8", newline="\n")

    def write(self, record) -> None:
        self._text.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        self._text.write("\n")

    def close(self) -> None:
        self._text.flush()
        self._text.detach()
        self._gz.close()


@contextmanager
def open_out(path: str):
    if path == "-":
        writer = Writer(sys.stdout.buffer)
        yield writer
        writer.close()
        sys.stdout.buffer.flush()
        return
    # written beside, renamed when complete: a failed dump leaves no half file behind
    partial = Path(f"{path}.part")
    try:
        with partial.open("wb") as stream:
            writer = Writer(stream)
            yield writer
            writer.close()
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def read_lines(path: str):
    """(line number, record) of the file, read as a stream."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        with gzip.GzipFile(fileobj=stream, mode="rb") as gz:
            text = io.TextIOWrapper(gz, encoding="utf-8")
            for number, line in enumerate(text, 1):
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BackupError(f"{path}:{number}: not a JSON line ({exc})") from None
    except (OSError, EOFError) as exc:
        raise BackupError(f"{path}: not a readable gzipped study file ({exc})") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
