"""What the benchmarks share: administering the PostgreSQL server they create their
databases on."""

from __future__ import annotations


def pg_admin(server_url: str, sql: str) -> None:
    """Run one statement (CREATE/DROP DATABASE) on the server's `postgres` database,
    outside a transaction."""
    import psycopg2

    conn = psycopg2.connect(f"{server_url}/postgres")
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute(sql)
    conn.close()


def pg_database_exists(server_url: str, name: str) -> bool:
    """Whether the server has a database called `name`."""
    import psycopg2

    conn = psycopg2.connect(f"{server_url}/postgres")
    with conn.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        found = cursor.fetchone() is not None
    conn.close()
    return found
