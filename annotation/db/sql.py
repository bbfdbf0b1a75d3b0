"""SQL for the bulk paths (the importers' writes, the label import's reads, the gold
export's tables), where the ORM costs more than the database: building Django lookups over
2,000 ids, or a model object a row. PostgreSQL gets COPY and typed arrays; SQLite gets
json_each and executemany."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable

from django.db import connection, transaction

COPY_PIECE = 1 << 20


def in_list(column: str, values, sql_type: str = "bigint") -> tuple[str, list]:
    """`column` is one of `values`: SQL and its one parameter (an array on PostgreSQL, a JSON
    list on SQLite), whatever the number of values. `sql_type` is the column's type: an
    array of another type (psycopg2 sends integers as int[]) is searched element by element,
    20 times slower for 2,000 ids than a hashed array of the column's own type."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s::{sql_type}[])", [list(values)]
    return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(values))]


def json_as_text(column: str) -> str:
    """A JSON column selected as its text (PostgreSQL's jsonb would come back parsed), for
    the caller to parse only what it needs."""
    return f"{column}::text" if connection.vendor == "postgresql" else column


def planner_statistics_kept() -> bool:
    """Whether the database's planner works from statistics a bulk writer should refresh
    as it writes (analyze): PostgreSQL's do, SQLite has none the writer keeps."""
    return connection.vendor == "postgresql"


def analyze(table: str) -> None:
    """Refresh the planner's statistics of `table` (PostgreSQL); raises DatabaseError for a
    database user who may not."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def query_rows(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def next_ids(table: str, n: int) -> list[int]:
    """PostgreSQL: n ids from the table's sequence, so that rows copied later can name the
    rows they belong to (a turn its conversation, a type link its annotation) in one pass."""
    return [
        pk
        for (pk,) in query_rows(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [table, n],
        )
    ]


def copy_text(value: str) -> str:
    """A value in COPY's text format: backslash escapes for the characters it gives meaning.
    Four str.replace calls beat both the csv module and str.translate on long texts."""
    return (
        value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )


def copy_lines(table: str, columns: str, lines: Iterable[str]) -> None:
    """PostgreSQL: COPY lines (in COPY's text format, each ending in a newline) into the
    table's columns. A refused row raises Django's DatabaseError (IntegrityError...), as
    execute() would."""
    # bytes, not StringIO, which keeps 4 bytes a character
    copy_data(table, columns, "".join(lines).encode())


def copy_data(table: str, columns: str, data: bytes) -> None:
    """copy_lines for lines already joined and encoded (the importer's writer thread gets
    them so, built by the reading thread)."""
    if not data:
        return
    with connection.cursor() as cursor, connection.wrap_database_errors:
        # in 1 MB pieces rather than psycopg2's 8 kB: fewer calls into Python
        cursor.cursor.copy_expert(
            f'COPY "{table}" ({columns}) FROM STDIN', io.BytesIO(data), size=COPY_PIECE
        )


def copy_out_csv(queryset) -> io.BytesIO:
    """PostgreSQL: a queryset's rows in COPY's CSV (NULL an empty field, the empty string a
    quoted one), for pyarrow to parse in C (db/arrow.read_table)."""
    sql, params = queryset.query.sql_with_params()
    data = io.BytesIO()
    with connection.cursor() as cursor, connection.wrap_database_errors:
        query = connection.ops.compose_sql(sql, params)
        cursor.copy_expert(f"COPY ({query}) TO STDOUT WITH (FORMAT csv)", data)
    return data
