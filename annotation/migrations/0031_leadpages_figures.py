"""Kept figures (issue 25): the study's and each group's counts, kept by triggers
(annotation/db/figures.py) and counted afresh here for the rows already there."""

import django.db.models.deletion
from django.db import migrations, models

from annotation.db import figures


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    # as they were then: without the count of labels (0038 adds it)
    if vendor == "postgresql":
        statements = figures.postgresql(labels=False)
    else:
        statements = figures.sqlite(labels=False)
    for sql in [*statements, *figures.recount(labels=False)]:
        schema_editor.execute(sql, params=None)


def uninstall(apps, schema_editor):
    for sql in figures.drop(schema_editor.connection.vendor):
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0030_annpath_queue"),
    ]

    operations = [
        migrations.CreateModel(
            name="StudyFigures",
            fields=[
                (
                    "study",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="figures",
                        serialize=False,
                        to="annotation.study",
                    ),
                ),
                ("conversations", models.BigIntegerField(default=0)),
                ("turns", models.BigIntegerField(default=0)),
                ("set_aside", models.BigIntegerField(default=0)),
                ("unassigned", models.BigIntegerField(default=0)),
                ("label_writes", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="GroupFigures",
            fields=[
                (
                    "group",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="figures",
                        serialize=False,
                        to="annotation.group",
                    ),
                ),
                ("conversations", models.BigIntegerField(default=0)),
                ("cards", models.BigIntegerField(default=0)),
                ("open", models.BigIntegerField(default=0)),
                ("disputed", models.BigIntegerField(default=0)),
                ("escalated", models.BigIntegerField(default=0)),
                ("agreed", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(install, uninstall),
    ]
