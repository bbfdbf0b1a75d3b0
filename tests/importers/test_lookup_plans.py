"""The writer's two per-batch lookups (fingerprints of earlier imports, ids seen before) must
stay index lookups however many conversations the study already holds. PostgreSQL plans
them on the table's statistics; a table filled faster than autovacuum analyses it (on this
project's machines autovacuum is off) was planned as a tiny one, on the study_id index, so
every lookup read all the study's rows: an import of 1,000,000 conversations went quadratic
(3.1x a bare COPY instead of under 2x, benchmarks/import_bench.py). The writer now runs
ANALYZE when due (writer.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.importers import import_files
from annotation.importers import writer as writer_module
from annotation.models import Conversation
from annotation.models import corpus as models_module
from tests.factories import make_study

pytestmark = pytest.mark.postgres

EARLIER = 50_000  # conversations the study holds before the import


def _fill(study, n: int) -> None:
    """n conversations stored as an earlier import would have (unique fingerprints and ids,
    metadata of a WildChat record's size), written by SQL: what matters here is the
    table's size, not how it got there."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {Conversation._meta.db_table} (external_id, source_format,
                source_file, source_line, system_prompt, preamble, metadata, n_turns,
                created_at, study_id, fingerprint, key)
            SELECT 'old-' || i, 'native', 'old.jsonl', i, '', '[]',
                jsonb_build_object('model', 'gpt-4', 'moderation', repeat('x', 600)), 1, now(), %s,
                encode(sha256(i::text::bytea), 'hex'), 'old-' || i
            FROM generate_series(1, %s) i""",
            [study.pk, n],
        )


def _plan(queryset) -> str:
    """EXPLAIN's text ("" for an empty batch, which sends no query)."""
    return queryset.explain()


def _native(i: int) -> dict:
    messages = [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "a"}]
    return {"id": f"new-{i}", "messages": messages}


def test_lookups_stay_on_their_indexes_on_a_large_table_never_analysed(
    transactional_db, files, monkeypatch
):
    study = make_study("big")
    _fill(study, EARLIER)
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 500)
    seen: list[tuple[str, str]] = []
    real_imported, real_earlier = writer_module.imported, writer_module.earlier_ids

    def imported(study, fingerprints):
        queryset = real_imported(study, fingerprints)
        seen.append(("fingerprints", _plan(queryset)))
        return queryset

    def earlier_ids(study, ids):
        queryset = real_earlier(study, ids)
        seen.append(("ids", _plan(queryset)))
        return queryset

    real_give_keys = models_module.give_keys

    def give_keys(rows, conversations):
        # the two lookups of conversation_keys.give_keys, planned where it plans them
        ids = sorted({c.external_id for c in conversations})
        seen.append(("key ids", _plan(rows.filter(external_id__in=ids).values_list("pk"))))
        seen.append(("keys", _plan(rows.filter(key__in=ids).values_list("key"))))
        return real_give_keys(rows, conversations)

    monkeypatch.setattr(writer_module, "imported", imported)
    monkeypatch.setattr(writer_module, "earlier_ids", earlier_ids)
    monkeypatch.setattr(models_module, "give_keys", give_keys)
    path = files.jsonl("new.jsonl", *(_native(i) for i in range(1000)))
    report = import_files(study, [path])
    assert (report.conversations, report.rejected) == (1000, 0)
    seen = [(kind, plan) for kind, plan in seen if plan]
    wanted = {
        "fingerprints": "conv_study_fingerprint",
        "ids": "external_id",
        "key ids": "external_id",
        "keys": "conv_study_key",
    }
    assert {kind for kind, _ in seen} == set(wanted)
    for kind, plan in seen:
        # the study_id index alone would read every row of the study for each batch
        assert "annotation_conversation_study_id" not in plan, (kind, plan)
        assert wanted[kind] in plan, (kind, plan)
