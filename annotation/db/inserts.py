"""Inserts where a row may be there already (another writer, a browser submit meanwhile):
PostgreSQL gets COPY or INSERT ... ON CONFLICT DO NOTHING over arrays, SQLite a check then
executemany (one writer at a time, so no row can appear between the two statements)."""

from __future__ import annotations

from django.db import IntegrityError, connection, transaction

from ..models import Assignment, CardState
from .sql import copy_lines, in_list


def insert_card_states(rows: list[tuple]) -> set[tuple[int, int]]:
    """Insert state rows (turn, group, status, round, updated_at) where the card has none;
    returns the (turn, group) keys inserted."""
    if not rows:
        return set()
    table = CardState._meta.db_table
    insert = f'INSERT INTO "{table}" (turn_id, group_id, status, round, updated_at)'
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"{insert} SELECT t, g, s, r, %s FROM unnest(%s::bigint[], %s::bigint[], "
                "%s::varchar[], %s::smallint[]) AS x(t, g, s, r) "
                "ON CONFLICT (turn_id, group_id) DO NOTHING RETURNING turn_id, group_id",
                [rows[0][4], *([r[i] for r in rows] for i in range(4))],
            )
            return set(cursor.fetchall())
        # SQLite: one writer at a time, so no row can appear between the two statements
        turns_sql, turns_param = in_list("turn_id", sorted({r[0] for r in rows}))
        groups_sql, groups_param = in_list("group_id", sorted({r[1] for r in rows}))
        cursor.execute(
            f'SELECT turn_id, group_id FROM "{table}" WHERE {turns_sql} AND {groups_sql}',
            turns_param + groups_param,
        )
        there = set(cursor.fetchall())
        missing = [r for r in rows if (r[0], r[1]) not in there]
        cursor.executemany(f"{insert} VALUES (%s, %s, %s, %s, %s)", missing)
        return {(r[0], r[1]) for r in missing}


def insert_assignments(rows: list[tuple]) -> None:
    """Assign (conversation, group, created_at) rows, skipping those someone assigned
    meanwhile: one statement (COPY on PostgreSQL, unless one of them is there already)."""
    if not rows:
        return
    table, columns = Assignment._meta.db_table, "conversation_id, group_id, created_at"
    if connection.vendor == "postgresql":
        stamp = rows[0][2].isoformat()
        try:
            with transaction.atomic():
                copy_lines(table, columns, [f"{c}\t{g}\t{stamp}\n" for c, g, _ in rows])
            return
        except IntegrityError:
            pass  # someone assigned one of them meanwhile: the statement below skips it
    with connection.cursor() as cursor:
        cursor.executemany(
            f'INSERT INTO "{table}" ({columns}) VALUES (%s, %s, %s) '
            "ON CONFLICT (conversation_id, group_id) DO NOTHING",
            rows,
        )
