"""The gold and raw exports name the original of a split part (split_from: its external id,
split_first_turn: where the part starts in it), and leave both empty for a conversation that
is not a part; in every format."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from annotation.exports import EXPORT_FORMATS, GOLD_COLUMNS, RAW_COLUMNS, write_gold, write_raw
from annotation.intake.splitting import split
from annotation.models import Conversation
from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled_parts(study, alice):
    group = make_group(study, "g1", [alice])
    original = make_conversation(study, "c1", n_turns=5)
    parts = split(original, [4])
    whole = make_conversation(study, "c2", n_turns=1)
    for conversation in [*parts, whole]:
        Conversation.objects.filter(pk=conversation.pk).assign(group)
        label(conversation.turns.get(index=1), alice, "code_rollback")
    return parts


def read(path, fmt: str) -> list[dict]:
    """The file's rows as plain dicts, the split columns as Python values (None: empty)."""
    if fmt == "jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    if fmt == "csv":
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            row["split_from"] = row["split_from"] or None
            first = row["split_first_turn"]
            row["split_first_turn"] = int(first) if first else None
            row["turn"] = int(row["turn"])
        return rows
    # pandas reads the integers as the nullable Int64, as the other integer columns
    assert str(pd.read_parquet(path)["split_first_turn"].dtype) == "Int64"
    return pq.read_table(path).to_pylist()


def split_cells(rows: list[dict]) -> list[tuple]:
    return [(r["conversation"], r["turn"], r["split_from"], r["split_first_turn"]) for r in rows]


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_the_gold_export_names_the_original_of_each_part(tmp_path, labelled_parts, fmt):
    path = tmp_path / f"gold.{fmt}"
    write_gold(labelled_parts[0].study, path, fmt)
    rows = read(path, fmt)
    assert list(rows[0])[: len(GOLD_COLUMNS)] == list(GOLD_COLUMNS)
    assert split_cells(rows) == [
        ("c1#1", 1, "c1", 1),
        ("c1#1", 2, "c1", 1),
        ("c1#1", 3, "c1", 1),
        ("c1#2", 1, "c1", 4),
        ("c1#2", 2, "c1", 4),
        ("c2", 1, None, None),
    ]


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_the_raw_export_names_the_original_of_each_part(tmp_path, labelled_parts, fmt):
    path = tmp_path / f"raw.{fmt}"
    write_raw(labelled_parts[0].study, path, fmt)
    rows = read(path, fmt)
    assert list(rows[0]) == list(RAW_COLUMNS)
    assert split_cells(rows) == [("c1#1", 1, "c1", 1), ("c1#2", 1, "c1", 4), ("c2", 1, None, None)]


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_the_gold_export_job_names_the_original_too(labelled_parts, lead, media, fmt, settings):
    """The export job (eager) writes the same columns as the function."""
    from annotation.models import Job, JobKind
    from annotation.tasks import run_export

    study = labelled_parts[0].study
    job = Job.objects.create(study=study, kind=JobKind.EXPORT, created_by=lead, params={})
    job.params = {"format": fmt, "raw": False}
    job.save()
    run_export.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == "done", job.error
    rows = read(media / job.result_file, fmt)
    assert ("c1#2", 1, "c1", 4) in split_cells(rows)
