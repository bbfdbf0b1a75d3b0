"""How the bulk writer writes (importers/writer.py), decided once per connection and passed
in: no module switch to flip.

    WriterOptions.for_connection()                      COPY and its writer thread on
                                                        PostgreSQL, bulk_create elsewhere
    WriterOptions.for_connection(copy=False)            PostgreSQL through bulk_create
    WriterOptions.for_connection(thread=False)          COPY without the writer thread
    WriterOptions.for_connection(check_fingerprints=False)
                                                        (the benchmark: what the check costs)
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection as default_connection


class WriterOptionsRefused(ValueError):
    """Options this connection cannot honour (COPY is PostgreSQL's)."""


@dataclass(frozen=True)
class WriterOptions:
    """`copy`: COPY ... FROM STDIN rather than bulk_create; `thread`: a writer thread with
    its own connection sends batch N while batch N+1 is read (COPY only; the writer still
    goes without it for a dry run or inside a transaction, where a second connection would
    not see the study); `check_fingerprints`: skip the records the study holds already."""

    copy: bool
    thread: bool
    check_fingerprints: bool = True

    @classmethod
    def for_connection(
        cls,
        conn=None,
        *,
        copy: bool | None = None,
        thread: bool | None = None,
        check_fingerprints: bool = True,
    ) -> WriterOptions:
        """The options for `conn` (Django's default connection unless given): what it
        does best, unless told otherwise."""
        conn = conn if conn is not None else default_connection
        postgres = conn.vendor == "postgresql"
        copy = postgres if copy is None else copy
        if copy and not postgres:
            raise WriterOptionsRefused(f"COPY needs PostgreSQL; this connection is {conn.vendor}")
        thread = copy if thread is None else thread
        if thread and not copy:
            raise WriterOptionsRefused("the writer thread sends COPY data: it needs copy=True")
        return cls(copy=copy, thread=thread, check_fingerprints=check_fingerprints)
