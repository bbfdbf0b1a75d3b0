"""The conversation browser's text search with an index (issue 25, point 3): which turns'
user message or reply contain a text, case-blind, as Django's `icontains` says it on each
engine, found through an index instead of a scan of every turn.

The match itself is unchanged: `icontains` on both columns (PostgreSQL: UPPER(column) LIKE
UPPER('%text%'), full Unicode case folding; SQLite: LIKE '%text%' ESCAPE '\\', case-blind
for ASCII letters only). The index only narrows the turns it is checked on:

- PostgreSQL: GIN indexes of trigrams (pg_trgm, gin_trgm_ops) on the turn's UPPER(user_text)
  and UPPER(reply_text) and the conversation's UPPER(external_id) and UPPER(key), the very
  expressions `icontains` compares, so the planner answers the unchanged conditions from
  them (a Bitmap Index Scan per column). A text under 3 characters has no trigram; the
  planner then scans, as before.
- SQLite: an FTS5 table with the trigram tokenizer (case-blind by Unicode folding, no
  diacritics removed) over the turns' two columns, its content read from the turn table
  (external content: the text is not stored twice), kept right by triggers on every insert,
  update and delete, whatever writes them (the ORM, the import's executemany, a backup's
  load, a cascade). The search asks it for the turns holding the text's trigrams, in order,
  then checks `icontains` on those alone. Its folding maps every pair of characters LIKE
  takes as equal (the same character, or an ASCII letter in either case) to one character,
  so it finds every turn LIKE finds, and the check leaves exactly LIKE's. A text under 3
  characters has no trigram: the search scans, as before. The conversations' key and
  external id (short) are scanned.

The browser's search on PostgreSQL is planned with `random_page_cost` at 1.1 for its own
queries (`index_plan`, a SET LOCAL in the search's transaction): at the default 4 (a spinning
disk's) the planner scans every turn for a common text (a text in one turn in seven: 1.4 s
at 100,000 conversations) where the trigram bitmap takes 0.2 s. Its scan's estimate counts
UPPER() of each turn's text as one cheap operator, yet that is most of the scan's time (the
replies are long); the bitmap's estimate counts its reads of the turns' pages as a disk's
random reads, yet they are in memory or on an SSD. A rare text takes the bitmap either way.

Django's SQLite schema editor rebuilds a table to alter it (a new table, the rows copied,
the old one dropped: its triggers with it). `ensure_text_index` (run after every
`migrate`: apps.py) puts back what is missing and rebuilds the FTS5 index from the turns
when it had to, so a later migration of Turn cannot leave the index stale."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection as default_connection
from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from ..models import Conversation, Turn

MIN_INDEXED = 3  # a trigram index knows no shorter text

TURN_TABLE = "annotation_turn"
FTS_TABLE = "annotation_turn_text_fts"
TRIGGERS = {
    f"{FTS_TABLE}_insert": f"""
        CREATE TRIGGER "{FTS_TABLE}_insert" AFTER INSERT ON "{TURN_TABLE}" BEGIN
            INSERT INTO "{FTS_TABLE}" (rowid, user_text, reply_text)
            VALUES (new.id, new.user_text, new.reply_text);
        END""",
    f"{FTS_TABLE}_delete": f"""
        CREATE TRIGGER "{FTS_TABLE}_delete" AFTER DELETE ON "{TURN_TABLE}" BEGIN
            INSERT INTO "{FTS_TABLE}" ("{FTS_TABLE}", rowid, user_text, reply_text)
            VALUES ('delete', old.id, old.user_text, old.reply_text);
        END""",
    f"{FTS_TABLE}_update": f"""
        CREATE TRIGGER "{FTS_TABLE}_update" AFTER UPDATE OF id, user_text, reply_text
        ON "{TURN_TABLE}" BEGIN
            INSERT INTO "{FTS_TABLE}" ("{FTS_TABLE}", rowid, user_text, reply_text)
            VALUES ('delete', old.id, old.user_text, old.reply_text);
            INSERT INTO "{FTS_TABLE}" (rowid, user_text, reply_text)
            VALUES (new.id, new.user_text, new.reply_text);
        END""",
}
CREATE_FTS = (
    f'CREATE VIRTUAL TABLE "{FTS_TABLE}" USING fts5(user_text, reply_text, '
    f"content='{TURN_TABLE}', content_rowid='id', tokenize='trigram case_sensitive 0')"
)
REBUILD_FTS = f'INSERT INTO "{FTS_TABLE}" ("{FTS_TABLE}") VALUES (\'rebuild\')'

PG_INDEXES = {
    f"{table}_{column}_trgm": (
        f'CREATE INDEX IF NOT EXISTS "{table}_{column}_trgm" ON "{table}" '
        f"USING gin (UPPER({column}) gin_trgm_ops)"
    )
    for table, column in [
        (TURN_TABLE, "user_text"),
        (TURN_TABLE, "reply_text"),
        ("annotation_conversation", "external_id"),
        ("annotation_conversation", "key"),
    ]
}
PG_EXTENSION = "CREATE EXTENSION IF NOT EXISTS pg_trgm"
# the cost of a random page read the search's queries are planned with (an SSD's, or pages in
# memory; PostgreSQL's default, 4, is a spinning disk's): see the module's docstring
SEARCH_RANDOM_PAGE_COST = "1.1"


class TextIndexUnavailable(RuntimeError):
    """The database refuses what the index needs (PostgreSQL: the pg_trgm extension)."""


def conversations_containing(text: str) -> QuerySet:
    """The ids of the conversations whose key or external id, or a turn's user message or
    reply, contains `text` (`icontains`), as one query: a union of the two lookups, each
    answered by its index (a condition OR-ed with the turns' would scan every conversation)."""
    by_name = Conversation.objects.filter(name_contains(text))
    in_turns = turns_containing(text).values("conversation_id").order_by()
    return by_name.values("pk").order_by().union(in_turns, all=True)


def name_contains(text: str) -> Q:
    """A conversation whose external id or key contains `text` (`icontains`)."""
    return Q(external_id__icontains=text) | Q(key__icontains=text)


def turn_contains(text: str, prefix: str = "") -> Q:
    """A turn (reached by `prefix`, as "turns__" from a conversation) whose user message or
    reply contains `text` (`icontains`): the match itself, whatever finds the turns."""
    return Q(**{f"{prefix}user_text__icontains": text}) | Q(
        **{f"{prefix}reply_text__icontains": text}
    )


def turns_containing(text: str) -> QuerySet[Turn]:
    """The turns whose user message or reply contains `text` (`icontains`)."""
    turns = Turn.objects.filter(turn_contains(text))
    if len(text) >= MIN_INDEXED and default_connection.vendor == "sqlite":
        candidates = f'SELECT rowid FROM "{FTS_TABLE}" WHERE "{FTS_TABLE}" MATCH %s'
        turns = turns.filter(pk__in=RawSQL(candidates, [fts_phrase(text)]))
    return turns


def estimated_share(text: str) -> tuple[float, float] | None:
    """PostgreSQL: the planner's estimate of the share of all turns whose user message or
    reply contains `text`, and the number of turns, from the statistics ANALYZE keeps of the
    trigram indexes' expressions (UPPER of each column: within a few percent on the pages
    benchmark's study). None where there is no such estimate: SQLite, a text under 3
    characters, a table never analysed. An estimate only chooses how to search, never what
    is found."""
    if default_connection.vendor != "postgresql" or len(text) < MIN_INDEXED:
        return None
    sql, params = turns_containing(text).values("pk").query.sql_with_params()
    with default_connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [TURN_TABLE])
        (turns,) = cursor.fetchone()
    if isinstance(plan, str):  # a driver that does not decode JSON
        plan = json.loads(plan)
    if turns is None or turns <= 0:  # never analysed (-1), or empty
        return None
    return min(1.0, plan[0]["Plan"]["Plan Rows"] / turns), float(turns)


@contextmanager
def index_plan(text: str) -> Iterator[None]:
    """Plan the queries run inside (a search for `text`) so that the trigram indexes answer
    them, common text or rare (PostgreSQL: `random_page_cost` set for this transaction alone,
    and put back after; nothing on SQLite, whose search asks its FTS5 index explicitly)."""
    if not text or default_connection.vendor != "postgresql":
        yield
        return
    nested = default_connection.in_atomic_block
    with transaction.atomic(savepoint=False):
        with default_connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('random_page_cost'), "
                "set_config('random_page_cost', %s, true)",
                [SEARCH_RANDOM_PAGE_COST],
            )
            (before, _) = cursor.fetchone()
        yield
        if nested:  # the transaction goes on (a caller's, a test's): the setting is put back
            with default_connection.cursor() as cursor:
                cursor.execute("SELECT set_config('random_page_cost', %s, true)", [before])


def fts_phrase(text: str) -> str:
    """`text` as one FTS5 phrase: inside double quotes every character is literal, a double
    quote written twice."""
    return '"' + text.replace('"', '""') + '"'


# -- creating it (the migration, and after every migrate) ---------------------------------------


def install(connection) -> None:
    """Create the index on `connection` (the migration)."""
    if connection.vendor == "postgresql":
        _install_postgresql(connection)
    elif connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(CREATE_FTS)
            for sql in TRIGGERS.values():
                cursor.execute(sql)
            cursor.execute(REBUILD_FTS)


def uninstall(connection) -> None:
    """Drop the index (the migration's reverse). The extension stays: others may use it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for name in PG_INDEXES:
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        elif connection.vendor == "sqlite":
            for name in TRIGGERS:
                cursor.execute(f'DROP TRIGGER IF EXISTS "{name}"')
            cursor.execute(f'DROP TABLE IF EXISTS "{FTS_TABLE}"')


def ensure_text_index(connection) -> list[str]:
    """Put back what a table rebuild dropped (SQLite: the triggers; then the FTS5 index is
    rebuilt from the turns, which may have changed unseen) once the migration that creates
    the index has run. Returns what it restored."""
    if connection.vendor != "sqlite":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT type, name FROM sqlite_master WHERE name = %s OR name IN (%s, %s, %s)",
            [FTS_TABLE, *TRIGGERS],
        )
        present = {name for _, name in cursor.fetchall()}
        if FTS_TABLE not in present:
            return []  # not migrated that far (or unmigrated): the migration will create it
        missing = [name for name in TRIGGERS if name not in present]
        for name in missing:
            cursor.execute(TRIGGERS[name])
        if missing:
            cursor.execute(REBUILD_FTS)
    return missing


def _install_postgresql(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
            if cursor.fetchone() is None:
                raise TextIndexUnavailable(
                    "The text search index needs PostgreSQL's pg_trgm extension, which this "
                    "server does not have: install PostgreSQL's contrib package "
                    "(postgresql-contrib) on the database server, then migrate again."
                )
            cursor.execute(PG_EXTENSION)
        for sql in PG_INDEXES.values():
            cursor.execute(sql)
