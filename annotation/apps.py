from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        post_migrate.connect(_ensure_text_index, sender=self)
        pre_migrate.connect(_drop_figures_triggers, sender=self)
        post_migrate.connect(_ensure_figures_triggers, sender=self)


def _ensure_text_index(sender, using, **kwargs) -> None:
    """A migration that alters Turn rebuilds its table on SQLite and drops the text index's
    triggers with the old one: put them back (annotation/db/textsearch.py)."""
    from django.db import connections

    from .db.textsearch import ensure_text_index

    ensure_text_index(connections[using])


def _drop_figures_triggers(sender, using, **kwargs) -> None:
    """On SQLite the kept figures' triggers (annotation/db/figures.py) on one table name
    others (a label's trigger reads its turn): a migration that rebuilds such a table
    (AlterField on Turn) would fail renaming it ("error in trigger lp_ann_ins: no such table").
    They are dropped before `migrate` and put back, the figures counted afresh, after it."""
    from django.db import connections

    from .db import figures

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for sql in figures.drop("sqlite"):
            cursor.execute(sql)


def _ensure_figures_triggers(sender, using, **kwargs) -> None:
    """After `migrate` (or `flush`) on SQLite: the kept figures' triggers back, the figures
    counted afresh from the rows (whatever a migration wrote meanwhile); nothing before the
    migration that makes the figures' tables."""
    from django.db import connections

    from .db import figures
    from .models import StudyFigures

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    table = StudyFigures._meta.db_table
    if table not in connection.introspection.table_names():
        return
    with connection.cursor() as cursor:
        # migrated back before 0038, the study's row has no count of labels
        columns = {c.name for c in connection.introspection.get_table_description(cursor, table)}
        labels = "labels" in columns
        for sql in [*figures.sqlite(labels), *figures.recount(labels)]:
            cursor.execute(sql)
