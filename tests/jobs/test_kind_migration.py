"""Migration 0024 gives the label import a job kind of its own (it was an `import` job with
params["what"] = "annotations") and makes an old coding-filter dry run over the study (an
`import` job with params["what"] = "filter_dry_run") the `filter` job a dry run is today;
backwards, label imports are `import` jobs told apart by params["what"] again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.slow

BEFORE = [("annotation", "0024_episodes")]
AFTER = [("annotation", "0025_job_kind_label_import")]


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def back_to_latest(transactional_db):
    yield
    MigrationExecutor(connection).migrate(latest())


def _jobs(state) -> dict:
    Job = (
        MigrationExecutor(connection)
        .loader.project_state(state)
        .apps.get_model("annotation", "Job")
    )
    return {job.pk: (job.kind, job.params) for job in Job.objects.order_by("pk")}


def check_the_kinds_migrate_both_ways() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    TaxonomyVersion = apps.get_model("taxonomy", "TaxonomyVersion")
    Taxonomy = apps.get_model("taxonomy", "Taxonomy")
    version = TaxonomyVersion.objects.create(
        taxonomy=Taxonomy.objects.create(slug="t", name="t"), number=1
    )
    study = apps.get_model("annotation", "Study").objects.create(
        slug="s", name="s", taxonomy_version=version
    )
    Job = apps.get_model("annotation", "Job")
    files = [{"path": "imports/1/1-l.jsonl", "name": "l.jsonl"}]
    rows = [
        ("import", {"what": "annotations", "files": files, "create_members": True}),
        ("import", {"what": "filter_dry_run"}),
        ("import", {"format": "auto", "files": files, "filter": "coding"}),
        ("filter", {"filter": "coding", "apply": True}),
        ("split", {"what": "apply"}),
    ]
    for kind, params in rows:
        Job.objects.create(study=study, kind=kind, params=params)

    MigrationExecutor(connection).migrate(AFTER)
    assert list(_jobs(AFTER).values()) == [
        ("label_import", {"files": files, "create_members": True}),
        ("filter", {"filter": "coding", "apply": False}),
        rows[2],
        rows[3],
        rows[4],  # a splitting job's params["what"] is its own business
    ]

    MigrationExecutor(connection).migrate(BEFORE)
    assert list(_jobs(BEFORE).values()) == [
        ("import", {"files": files, "create_members": True, "what": "annotations"}),
        ("filter", {"filter": "coding", "apply": False}),  # a kind the old code reads alike
        rows[2],
        rows[3],
        rows[4],
    ]


def test_the_job_kinds_migrate_forwards_and_backwards(back_to_latest):
    check_the_kinds_migrate_both_ways()


@pytest.mark.postgres
def test_the_job_kinds_migrate_on_postgres(back_to_latest):
    check_the_kinds_migrate_both_ways()
