"""Integer columns of a query, straight into numpy arrays (the agreement's rows, a million
cards): PostgreSQL sends them with COPY ... TO STDOUT (FORMAT binary), parsed in blocks;
SQLite through a cursor read in chunks. Both give the same arrays."""

from __future__ import annotations

import io
import time

import numpy as np
from django.db import connection

CHUNK_ROWS = 50_000

# parse the COPY stream every this many bytes (numpy works on blocks, memory stays bounded)
COPY_BLOCK_BYTES = 8 << 20

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"

_HEADER_BYTES = len(_SIGNATURE) + 8  # signature, flags (int32), extension length (int32)

_TRAILER = b"\xff\xff"  # field count -1


class _BinaryColumns(io.RawIOBase):
    """The raw file under COPY ... (FORMAT binary) of `n_columns` bigint columns, none
    NULL: every row is then the same number of bytes, so each block of the stream is one
    numpy structured array (big-endian), its value fields the columns. psycopg2 writes a
    row at a time: an io.BufferedWriter in front (`target()`) gathers them in C and hands
    this class blocks of COPY_BLOCK_BYTES."""

    def __init__(self, n_columns: int) -> None:
        super().__init__()
        fields = [("n", ">i2")]
        for i in range(n_columns):
            fields += [(f"size{i}", ">i4"), (f"value{i}", ">i8")]
        self.dtype = np.dtype(fields)
        self.n_columns = n_columns
        self.rest = b""
        self.header_read = False
        self.blocks: list[list[np.ndarray]] = [[] for _ in range(n_columns)]

    def target(self) -> io.BufferedWriter:
        return io.BufferedWriter(self, buffer_size=COPY_BLOCK_BYTES)

    def writable(self) -> bool:
        return True

    def write(self, block) -> int:
        n_bytes = len(block)
        data = self.rest + bytes(block)
        start = 0
        if not self.header_read:
            if len(data) < _HEADER_BYTES:
                self.rest = data
                return n_bytes
            if not data.startswith(_SIGNATURE):
                raise ValueError("COPY: not PostgreSQL's binary format")
            start = _HEADER_BYTES + int.from_bytes(data[_HEADER_BYTES - 4 : _HEADER_BYTES], "big")
            self.header_read = True
        n_rows = (len(data) - start) // self.dtype.itemsize
        rows = np.frombuffer(data, dtype=self.dtype, count=n_rows, offset=start)
        if n_rows:
            if not (rows["n"] == self.n_columns).all() or any(
                not (rows[f"size{i}"] == 8).all() for i in range(self.n_columns)
            ):
                raise ValueError("COPY: a row is not all non-null bigint columns")
            for i, blocks in enumerate(self.blocks):
                blocks.append(rows[f"value{i}"].astype(np.int64))
        self.rest = data[start + n_rows * self.dtype.itemsize :]
        return n_bytes

    def columns(self) -> list[np.ndarray]:
        if self.rest != _TRAILER:
            raise ValueError("COPY: the stream does not end where a row ends")
        return [_joined(self.blocks, i) for i in range(self.n_columns)]


def _joined(blocks: list[list[np.ndarray]], i: int) -> np.ndarray:
    """Column i in one array; its blocks let go at once (a column more at a time in memory,
    not the whole result twice)."""
    column = np.concatenate(blocks[i]) if blocks[i] else np.zeros(0, dtype=np.int64)
    blocks[i] = []
    return column


def read_columns(sql: str, params: list, n_columns: int) -> list[np.ndarray]:
    """The int64 columns of an all-integer query with no NULL. PostgreSQL: COPY in binary,
    parsed in blocks; otherwise a cursor read in chunks."""
    if connection.vendor == "postgresql":
        names = ", ".join(f"c{i}" for i in range(n_columns))
        casts = ", ".join(f"CAST(q.c{i} AS bigint)" for i in range(n_columns))
        with connection.cursor() as cursor:
            # the query's parameters bound by the driver, as execute() would
            query = cursor.mogrify(sql, params).decode()
            parser = _BinaryColumns(n_columns)
            copy = f"COPY (SELECT {casts} FROM ({query}) AS q({names})) TO STDOUT (FORMAT binary)"
            target = parser.target()
            started = time.monotonic()
            with connection.wrap_database_errors:
                cursor.cursor.copy_expert(copy, target)
            target.flush()
            if connection.queries_logged:  # in the query log as execute() would put it
                seconds = time.monotonic() - started
                connection.queries_log.append({"sql": copy, "time": f"{seconds:.3f}"})
        return parser.columns()
    chunks = []
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            chunks.append(np.array(rows, dtype=np.int64).reshape(-1, n_columns))
    if not chunks:
        return [np.zeros(0, dtype=np.int64) for _ in range(n_columns)]
    return [np.ascontiguousarray(column) for column in np.concatenate(chunks).T]
