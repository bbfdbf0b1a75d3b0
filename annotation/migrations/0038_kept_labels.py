"""The kept figures count each study's current annotations (StudyFigures.labels: the API's
list of them reads it instead of counting them). PostgreSQL's trigger functions on the
annotations are replaced and the figures counted afresh; SQLite's triggers are put back, and
the figures counted, after every `migrate` (apps.py)."""

from django.db import migrations, models

from annotation.db import figures


def drop_sqlite_triggers(apps, schema_editor):
    """SQLite rebuilds the figures' table to add the column: its triggers, which name it,
    would fail the rename (made by 0031 earlier in the same `migrate`; apps.py puts them back
    after it)."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in figures.drop("sqlite"):
            schema_editor.execute(sql, params=None)


def reinstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in [*figures.postgresql(), *figures.recount()]:
        schema_editor.execute(sql, params=None)


def uninstall(apps, schema_editor):
    """Backwards, before the column goes: PostgreSQL's functions without the count, SQLite's
    triggers dropped (as drop_sqlite_triggers says)."""
    vendor = schema_editor.connection.vendor
    statements = figures.postgresql(labels=False) if vendor == "postgresql" else figures.drop(vendor)
    for sql in statements:
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0037_times_job_kind"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers, drop_sqlite_triggers, elidable=True),
        migrations.AddField(
            model_name="studyfigures",
            name="labels",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        # backwards: the functions without the count, before the column goes
        migrations.RunPython(reinstall, uninstall, elidable=True),
    ]
