"""Migration 0021 fills the key of the conversations a database already holds (issue 20,
defect 1): the external id for the first with it, `~2`, `~3`... in the order of their ids,
per study; then the key is unique in the study. On SQLite and on PostgreSQL."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.slow

BEFORE = [("annotation", "0020_conversation_split_considered")]
# the key column is there, filled, not yet unique
FILLED = [("annotation", "0021_conversation_key")]
FILL = importlib.import_module("annotation.migrations.0021_conversation_key").fill_keys


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def check_the_migration_fills_keys() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Study = apps.get_model("annotation", "Study")
    Conversation = apps.get_model("annotation", "Conversation")
    TaxonomyVersion = apps.get_model("taxonomy", "TaxonomyVersion")
    Taxonomy = apps.get_model("taxonomy", "Taxonomy")
    version = TaxonomyVersion.objects.create(
        taxonomy=Taxonomy.objects.create(slug="t", name="t"), number=1
    )
    s1, s2 = (Study.objects.create(slug=s, name=s, taxonomy_version=version) for s in "ab")
    made = []
    # s1: x three times, one id spelled like a key, one ending in ~1; s2 has its own x
    for study, external_id in [
        (s1, "x"),
        (s1, "y"),
        (s1, "x"),
        (s2, "x"),
        (s1, "x~2"),
        (s1, "x"),
        (s1, "z~1"),
    ]:
        made.append(Conversation.objects.create(study=study, external_id=external_id))
    executor = MigrationExecutor(connection)
    executor.migrate(FILLED)
    Conversation = executor.loader.project_state(FILLED).apps.get_model(
        "annotation", "Conversation"
    )
    keys = [Conversation.objects.get(pk=c.pk).key for c in made]
    assert keys == ["x", "y", "x~3", "x", "x~2", "x~4", "z~1~2"]
    # the function itself, on keys not yet filled
    Conversation.objects.update(key="")
    FILL(executor.loader.project_state(FILLED).apps, None)
    keys = [Conversation.objects.get(pk=c.pk).key for c in made]
    assert keys == ["x", "y", "x~3", "x", "x~2", "x~4", "z~1~2"]
    executor = MigrationExecutor(connection)
    executor.migrate(latest())  # the unique constraint goes on over the filled keys
    from annotation.models import Conversation as Current

    assert list(Current.objects.order_by("pk").values_list("key", flat=True)) == keys


@pytest.fixture
def back_to_latest(transactional_db):
    yield
    MigrationExecutor(connection).migrate(latest())


def test_the_migration_fills_keys_in_order_of_id(back_to_latest):
    check_the_migration_fills_keys()


@pytest.mark.postgres
def test_the_migration_fills_keys_on_postgres(back_to_latest):
    check_the_migration_fills_keys()
