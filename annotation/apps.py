from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AnnotationConfig(AppConfig):
    name = "annotation"

    def ready(self) -> None:
        post_migrate.connect(_ensure_text_index, sender=self)


def _ensure_text_index(sender, using, **kwargs) -> None:
    """A migration that alters Turn rebuilds its table on SQLite and drops the text index's
    triggers with the old one: put them back (annotation/db/textsearch.py)."""
    from django.db import connections

    from .db.textsearch import ensure_text_index

    ensure_text_index(connections[using])
