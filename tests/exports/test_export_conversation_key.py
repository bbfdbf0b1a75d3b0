"""Two conversations with one external id (WildChat repeats its hashes) are told apart in
every export by `conversation_key`, beside `conversation` (issue 20, defect 1): the gold
file (Parquet, CSV, JSONL) had rows with one (group, conversation, turn) and different
labels. Labels are imported by key, and a plain id that names both is an error naming
their keys."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation import exports
from annotation.importers import import_files
from annotation.models import Annotation, Conversation
from tests.factories import make_group
from tests.importers.test_wildchat import wildchat

pytestmark = pytest.mark.django_db

AMBIGUOUS, ROLLBACK = "ambiguous_instruction", "code_rollback"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def twins(tmp_path, study, alice):
    """Two WildChat conversations with the hash x, in one group; alice labels each
    differently, naming them by key (the first: x~1, the plain id being ambiguous)."""
    path = write_jsonl(
        tmp_path / "w.jsonl",
        [wildchat("x", [("first question", "a")]), wildchat("x", [("second question", "b")])],
    )
    import_files(study, [path])
    group = make_group(study, "g1", [alice])
    Conversation.objects.filter(study=study).assign(group)
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {
                "conversation": "x~1",
                "turn": 1,
                "annotator": "alice",
                "labels": [AMBIGUOUS],
                "group": "g1",
            },
            {
                "conversation": "x~2",
                "turn": 1,
                "annotator": "alice",
                "labels": [ROLLBACK],
                "group": "g1",
            },
        ],
    )
    call_command("import_annotations", study.slug, str(labels), stdout=StringIO())
    return study


def test_labels_are_imported_by_key(twins):
    by_key = {
        a.turn.conversation.key: [t.code for t in a.types.all()]
        for a in Annotation.objects.filter(turn__conversation__study=twins)
    }
    assert by_key == {"x": [AMBIGUOUS], "x~2": [ROLLBACK]}


def test_a_plain_id_naming_two_conversations_is_an_error_naming_their_keys(tmp_path, twins):
    labels = write_jsonl(
        tmp_path / "plain.jsonl",
        [{"conversation": "x", "turn": 1, "annotator": "alice", "labels": [], "group": "g1"}],
    )
    err = StringIO()
    with pytest.raises(CommandError, match="nothing could be imported"):
        call_command("import_annotations", twins.slug, str(labels), stdout=StringIO(), stderr=err)
    assert "plain.jsonl:1: conversation: id 'x' is ambiguous: 2 conversations" in err.getvalue()
    assert "x~1 (key x) or x~2" in err.getvalue()


def gold(study, tmp_path, fmt: str) -> pd.DataFrame:
    path = tmp_path / f"gold.{fmt}"
    exports.write_gold(study, path, fmt)
    if fmt == "parquet":
        return pd.read_parquet(path)
    if fmt == "csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    return pd.DataFrame([json.loads(line) for line in path.read_text().splitlines()])


def codes(value) -> list[str]:
    return value.split("|") if isinstance(value, str) else list(value)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_gold_rows_are_told_apart_by_conversation_key(tmp_path, twins, fmt):
    df = gold(twins, tmp_path, fmt)
    columns = list(df.columns)
    assert columns.index("conversation_key") == columns.index("conversation") + 1
    assert df["conversation"].tolist() == ["x", "x"]
    assert df["conversation_key"].tolist() == ["x", "x~2"]
    assert not df.duplicated(["group", "conversation_key", "turn"]).any()
    labels = dict(zip(df["conversation_key"], map(codes, df["labels_alice"]), strict=True))
    assert labels == {"x": [AMBIGUOUS], "x~2": [ROLLBACK]}


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_raw_rows_are_told_apart_by_conversation_key(tmp_path, twins, fmt):
    path = tmp_path / f"raw.{fmt}"
    exports.write_raw(twins, path, fmt)
    if fmt == "parquet":
        df = pd.read_parquet(path)
    elif fmt == "csv":
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    else:
        df = pd.DataFrame([json.loads(line) for line in path.read_text().splitlines()])
    columns = list(df.columns)
    assert columns.index("conversation_key") == columns.index("conversation") + 1
    labels = dict(zip(df["conversation_key"], map(codes, df["labels"]), strict=True))
    assert labels == {"x": [AMBIGUOUS], "x~2": [ROLLBACK]}


def test_a_part_names_its_originals_key(tmp_path, study):
    """A part of the second x names that x (split_from), and is named after its key."""
    from annotation.intake.splitting import split

    path = write_jsonl(
        tmp_path / "w.jsonl",
        [
            wildchat("x", [("q1", "a"), ("q2", "b")]),
            wildchat("x", [("other q1", "a"), ("other q2", "b")]),
        ],
    )
    import_files(study, [path])
    second = Conversation.objects.get(study=study, key="x~2")
    parts = split(second, [2])
    assert [(p.external_id, p.key) for p in parts] == [("x~2#1", "x~2#1"), ("x~2#2", "x~2#2")]
    # the first x can be split too: its parts' names are free
    first = Conversation.objects.get(study=study, key="x")
    assert [p.key for p in split(first, [2])] == ["x#1", "x#2"]
    Conversation.objects.filter(study=study, split_from=second).assign(make_group(study, "g"))
    rows = list(exports.gold_rows(study))
    assert {(r["conversation_key"], r["split_from"]) for r in rows} == {
        ("x~2#1", "x~2"),
        ("x~2#2", "x~2"),
    }


def test_labels_are_imported_by_the_gold_files_conversation_key(tmp_path, twins, bob):
    """A file made from the gold export names each conversation by its conversation_key
    (the first x's is the plain x): exactly that conversation; with its conversation too,
    both must name it."""
    make_group(twins, "g2", [bob])
    rows = list(exports.gold_rows(twins))
    records = [
        {"conversation_key": r["conversation_key"], "turn": r["turn"], "annotator": "bob"}
        for r in rows
    ]
    records[0]["conversation"] = "x"
    records.append({**records[1], "conversation": "y"})
    for r, labels in zip(records, [[AMBIGUOUS], [ROLLBACK], []], strict=True):
        r.update(labels=labels, group="g2")
    path = write_jsonl(tmp_path / "by-key.jsonl", records)
    err = StringIO()
    call_command("import_annotations", twins.slug, str(path), stdout=StringIO(), stderr=err)
    assert err.getvalue().strip() == (
        f"{path}:3: conversation: 'y' is not the conversation with the key 'x~2' "
        "(its external id is 'x')"
    )
    by_key = {
        a.turn.conversation.key: [t.code for t in a.types.all()]
        for a in Annotation.objects.filter(annotator__username="bob")
    }
    assert by_key == {"x": [AMBIGUOUS], "x~2": [ROLLBACK]}
