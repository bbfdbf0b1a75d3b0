"""The conversation browser's text search with an index (issue 25, point 3): on PostgreSQL
the pg_trgm extension and GIN trigram indexes on the turns' UPPER(user_text) and
UPPER(reply_text) and the conversations' UPPER(external_id) and UPPER(key) (what
`icontains` compares); on SQLite an FTS5 table with the trigram tokenizer over the
turns' texts, kept by triggers and filled from the turns already there. Each engine gets
only its own (the connection's vendor decides); the SQL is annotation/db/textsearch.py's,
which also puts the SQLite triggers back after a later migration rebuilds the turn table.
Building the indexes reads every turn once: on a big PostgreSQL study this migration takes
a while and holds off writes to turns meanwhile."""

from django.db import migrations

from annotation.db import textsearch


def create(apps, schema_editor):
    textsearch.install(schema_editor.connection)


def drop(apps, schema_editor):
    textsearch.uninstall(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0032_leadpages_queue_index"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]
