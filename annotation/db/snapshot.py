"""One snapshot for a reader's many queries (a backup dump, the agreement's rows)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def read_snapshot() -> Iterator[None]:
    """A transaction whose queries all see the same rows: REPEATABLE READ READ ONLY on
    PostgreSQL when it is the outermost one (the setting must be the transaction's first
    statement; inside the caller's transaction, the caller's isolation holds); on SQLite one
    transaction is one snapshot already."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield
