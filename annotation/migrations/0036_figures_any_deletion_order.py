"""The kept figures' triggers (annotation/db/figures.py) as they are now: a conversation
deleted before its assignments keeps the groups' cards right (and, on SQLite, no longer sets
them to NULL). PostgreSQL keeps its trigger functions: they are replaced here, and the figures
counted afresh. SQLite's triggers are put back after every `migrate` (apps.py): nothing to do."""

from django.db import migrations

from annotation.db import figures


def reinstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    # as they were then: without the count of labels (0038 adds it)
    for sql in [*figures.postgresql(labels=False), *figures.recount(labels=False)]:
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0035_epmod_episode_decisions_comments"),
    ]

    operations = [
        # backwards: the new functions stay (they are right for the old code too)
        migrations.RunPython(reinstall, migrations.RunPython.noop, elidable=True),
    ]
