"""Exports of a taxonomy of several axes (agent-misalignment): the gold file splits each
card's consensus into one column per axis (`<axis>_labels` for a multi-select axis, a list;
`<axis>_label` for a pick-one axis, one code), the raw file each annotation's labels the same
way, with the evidence quote's span; a one-axis taxonomy's files keep their columns."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotation import exports
from annotation.evidence import EvidenceSpan
from tests.factories import label, make_conversation, make_group, make_study

pytestmark = pytest.mark.django_db

EPISODE = [
    "scope_overreach",
    "faulty_implementation",
    "underspecified_instruction",
    "DS2",
    "code_or_task",
    "visible",
    "RV2",
]
AXIS_COLUMNS = [
    "symptom_labels",
    "cause_labels",
    "damage_severity_label",
    "damage_locus_label",
    "resolution_status_label",
    "resolver_label",
]


@pytest.fixture
def agents(alice, bob):
    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    first, second, third = make_conversation(
        study, "session-1", n_turns=3, group=group
    ).turns.order_by("index")
    # agreed on every axis: a unanimous consensus
    label(first, alice, *EPISODE, confidence=4)
    label(first, bob, *EPISODE)
    # agreed on "nothing on any axis"
    label(second, alice)
    label(second, bob)
    # disagreed on the damage: no consensus yet; alice quotes the earlier turn
    quote = first.user_text[:10]
    label(
        third,
        alice,
        "scope_overreach",
        "DS1",
        evidence=quote,
        span=EvidenceSpan(first.pk, "user", 0, 10),
    )
    label(third, bob, "scope_overreach", "DS3", "project")
    return study


def plain(cell):
    """A cell as JSON would hold it (Parquet gives arrays for lists, NaN or NA for null)."""
    if isinstance(cell, str) or cell is None:
        return cell
    if hasattr(cell, "__len__"):
        return list(cell)
    return None if pd.isna(cell) else cell


def read(path, fmt):
    if fmt == "jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    if fmt == "parquet":
        return pd.read_parquet(path).to_dict("records")
    return pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_the_gold_file_has_one_column_group_per_axis(tmp_path, agents, fmt):
    path = tmp_path / f"gold.{fmt}"
    exports.write_gold(agents, path, fmt)
    rows = read(path, fmt)
    assert list(rows[0])[: len(exports.GOLD_COLUMNS) + 6] == [*exports.GOLD_COLUMNS, *AXIS_COLUMNS]
    cells = [[row[c] for c in AXIS_COLUMNS] for row in rows]
    if fmt == "csv":
        assert cells == [
            [
                "faulty_implementation|scope_overreach",
                "underspecified_instruction",
                "DS2",
                "code_or_task",
                "visible",
                "RV2",
            ],
            ["-", "-", "", "", "", ""],
            ["", "", "", "", "", ""],
        ]
        return
    cells = [[plain(c) for c in row] for row in cells]
    assert cells == [
        [
            ["faulty_implementation", "scope_overreach"],
            ["underspecified_instruction"],
            "DS2",
            "code_or_task",
            "visible",
            "RV2",
        ],
        [[], [], None, None, None, None],
        [None, None, None, None, None, None],
    ]


def test_the_raw_file_splits_each_annotation_by_axis_with_its_evidence_span(tmp_path, agents):
    path = tmp_path / "raw.jsonl"
    exports.write_raw(agents, path, "jsonl")
    rows = read(path, "jsonl")
    assert list(rows[0]) == [*exports.RAW_COLUMNS, *AXIS_COLUMNS]
    first = rows[0]
    assert (first["annotator"], first["confidence"]) == ("alice", 4)
    assert [first[c] for c in AXIS_COLUMNS] == [
        ["faulty_implementation", "scope_overreach"],
        ["underspecified_instruction"],
        "DS2",
        "code_or_task",
        "visible",
        "RV2",
    ]
    quoted = next(r for r in rows if r["evidence"])
    assert (quoted["turn"], quoted["annotator"]) == (3, "alice")
    assert [quoted[c] for c in exports.columns.EVIDENCE_SPAN_COLUMNS] == [1, "user", None, 0, 10]
    assert quoted["damage_severity_label"] == "DS1"
    assert [rows[0][c] for c in exports.columns.EVIDENCE_SPAN_COLUMNS] == [None] * 5


def test_a_one_axis_taxonomy_keeps_its_columns(tmp_path, study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    label(turn, alice, "code_rollback")
    exports.write_gold(study, tmp_path / "g.jsonl", "jsonl")
    exports.write_raw(study, tmp_path / "r.jsonl", "jsonl")
    gold = read(tmp_path / "g.jsonl", "jsonl")[0]
    raw = read(tmp_path / "r.jsonl", "jsonl")[0]
    assert list(gold) == [*exports.GOLD_COLUMNS, "labels_alice", "labels_bob"]
    assert list(raw) == list(exports.RAW_COLUMNS)
