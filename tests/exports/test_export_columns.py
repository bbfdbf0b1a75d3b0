"""Gold export columns: the moderator's rationale, the turn's text on request (--with-text),
and integer columns that stay integers in every format, nulls included."""

from __future__ import annotations

import csv
import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from annotation.models import CardState
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

AMBIGUOUS, INCOMPLETE, ROLLBACK = "ambiguous_instruction", "incomplete_instruction", "code_rollback"


def export(path: Path, fmt: str, *args: str) -> str:
    out = StringIO()
    call_command("export_gold", "s1", "--format", fmt, "--output", str(path), *args, stdout=out)
    return out.getvalue()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def decided(study, alice, bob):
    """c1#1 escalated, decided by the moderator with a rationale; c1#2 unanimous; c1#3 open
    (alice only): no consensus, so from_round is null there."""
    group = make_group(study, "g1", [alice, bob], moderator=make_user("mod"))
    turn1, turn2, turn3 = make_conversation(study, "c1", n_turns=3, group=group).turns.all()
    label(turn1, alice, ROLLBACK, confidence=4)
    label(turn1, bob)
    label(turn1, alice, ROLLBACK, AMBIGUOUS, round=2)
    label(turn1, bob, INCOMPLETE, round=2)
    by_code = study.taxonomy_version.types_by_code()
    CardState.decide(
        turn1, group, group.moderator, [by_code[AMBIGUOUS]], 'the "fix" reverts turn 2, see line 3'
    )
    label(turn2, alice)
    label(turn2, bob)
    label(turn3, alice, INCOMPLETE)
    turn3.user_text = 'write a parser,\nwith a comma and a "quote"'
    turn3.reply_text = "```python\ndef parse(s):\n    return s.split(',')\n```"
    turn3.save()
    return group


def test_it_exports_the_moderators_rationale(tmp_path, decided):
    export(tmp_path / "gold.jsonl", "jsonl")
    export(tmp_path / "gold.csv", "csv")

    rows = read_jsonl(tmp_path / "gold.jsonl")
    assert rows[0]["rationale"] == 'the "fix" reverts turn 2, see line 3'
    assert rows[0]["method"] == "moderator"
    assert rows[1]["method"] == "unanimous" and rows[1]["rationale"] is None
    assert rows[2]["rationale"] is None  # no consensus at all
    cells = read_csv(tmp_path / "gold.csv")
    assert [c["rationale"] for c in cells] == ['the "fix" reverts turn 2, see line 3', "", ""]


def test_it_adds_the_turns_text_only_with_with_text(tmp_path, decided):
    export(tmp_path / "plain.jsonl", "jsonl")
    export(tmp_path / "text.jsonl", "jsonl", "--with-text")
    export(tmp_path / "text.csv", "csv", "--with-text")
    export(tmp_path / "text.parquet", "parquet", "--with-text")

    assert "user_text" not in read_jsonl(tmp_path / "plain.jsonl")[0]
    third = decided.conversations.get().turns.get(index=3)
    row = read_jsonl(tmp_path / "text.jsonl")[2]
    assert (row["user_text"], row["reply_text"]) == (third.user_text, third.reply_text)
    cell = read_csv(tmp_path / "text.csv")[2]
    assert (cell["user_text"], cell["reply_text"]) == (third.user_text, third.reply_text)
    frame = pd.read_parquet(tmp_path / "text.parquet")
    assert frame["reply_text"].tolist()[2] == third.reply_text
    # the labels columns still come last, after the text
    assert list(frame.columns)[-2:] == ["labels_alice", "labels_bob"]


def test_it_adds_the_turns_text_to_raw_rows_too(tmp_path, decided):
    export(tmp_path / "raw.jsonl", "jsonl", "--raw", "--with-text")

    turns = {t.index: t for t in decided.conversations.get().turns.all()}
    for row in read_jsonl(tmp_path / "raw.jsonl"):
        assert row["user_text"] == turns[row["turn"]].user_text


def test_it_keeps_rounds_integers_in_csv_and_jsonl(tmp_path, decided):
    export(tmp_path / "gold.csv", "csv")
    export(tmp_path / "gold.jsonl", "jsonl")
    export(tmp_path / "raw.csv", "csv", "--raw")
    export(tmp_path / "raw.jsonl", "jsonl", "--raw")

    assert [c["from_round"] for c in read_csv(tmp_path / "gold.csv")] == ["2", "1", ""]
    assert [r["from_round"] for r in read_jsonl(tmp_path / "gold.jsonl")] == [2, 1, None]
    raw_cells = read_csv(tmp_path / "raw.csv")
    assert {c["round"] for c in raw_cells} == {"1", "2"}
    assert [c["confidence"] for c in raw_cells][0] == "4"
    assert {c["confidence"] for c in raw_cells[1:]} == {""}
    for row in read_jsonl(tmp_path / "raw.jsonl"):
        assert type(row["turn"]) is int and type(row["round"]) is int
        assert row["confidence"] is None or type(row["confidence"]) is int


def test_it_reads_integer_columns_back_as_nullable_integers_from_parquet(tmp_path, decided):
    export(tmp_path / "gold.parquet", "parquet")
    export(tmp_path / "raw.parquet", "parquet", "--raw")

    gold, raw = (
        pd.read_parquet(tmp_path / "gold.parquet"),
        pd.read_parquet(tmp_path / "raw.parquet"),
    )
    assert str(gold["from_round"].dtype) == "Int64"  # not float64 because of the null
    assert gold["from_round"].tolist()[:2] == [2, 1] and gold["from_round"].isna().tolist()[2]
    assert str(gold["turn"].dtype) in ("int64", "Int64")
    assert str(raw["confidence"].dtype) == "Int64"
    assert raw["confidence"].tolist()[0] == 4
    assert str(raw["round"].dtype) in ("int64", "Int64")
    # and the file itself has integer types, whatever reads it
    for name, columns in (
        ("gold", ["turn", "from_round"]),
        ("raw", ["turn", "round", "confidence"]),
    ):
        schema = pq.read_schema(tmp_path / f"{name}.parquet")
        for column in columns:
            assert pa.types.is_integer(schema.field(column).type), (name, column)


AGENT_PARTS = [
    {"type": "thinking", "content": "the test fails on an empty list"},
    {"type": "tool_call", "tool": "Bash", "input": {"command": "pytest -q tests/test_x.py"}},
    {"type": "tool_result", "content": "1 failed, 3 passed"},
    {"type": "tool_call", "tool": "Edit", "input": {"file_path": "x.py", "new": "if not xs:"}},
]


@pytest.mark.parametrize("raw", [False, True], ids=["gold", "raw"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_with_text_writes_an_agents_reply_parts_in_order(tmp_path, decided, raw, fmt):
    """An agent's thinking, tool calls and results are in `reply_parts` (JSON, in order), the
    prose alone in `reply_text` (issue 20, defect 4); a turn with no parts has []."""
    third = decided.conversations.get().turns.get(index=3)
    third.reply_parts = AGENT_PARTS
    third.save()
    path = tmp_path / f"text.{fmt}"
    export(path, fmt, "--with-text", *(["--raw"] if raw else []))
    if fmt == "jsonl":
        rows = read_jsonl(path)
    elif fmt == "csv":
        rows = read_csv(path)
    else:
        rows = pd.read_parquet(path).to_dict("records")
    for row in rows:
        parts = json.loads(row["reply_parts"])
        assert parts == (AGENT_PARTS if row["turn"] in (3, "3") else [])
        if row["turn"] in (3, "3"):
            assert row["reply_text"] == third.reply_text
