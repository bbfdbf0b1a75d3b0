"""How Django connects to each database engine (config/settings.py takes these): no import
of models or of Django's app registry here, the settings read it before either exists."""

from __future__ import annotations

SQLITE = "django.db.backends.sqlite3"


def is_sqlite(database: dict) -> bool:
    return database["ENGINE"] == SQLITE


def sqlite_options() -> dict:
    """SQLite's connection options: WAL and IMMEDIATE transactions let the web process and
    the embedded worker write to the same file without "database is locked" errors."""
    return {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
