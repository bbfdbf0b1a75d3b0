"""The detectors' interface: a registry by name, each detector naming a type of the
interaction-smells preset, and `detect` over a conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.judges.detectors import REGISTRY, Detector, Evidence, TurnView, detect, get

ROOT = Path(__file__).resolve().parents[3]


def preset_codes() -> set[str]:
    preset = json.loads((ROOT / "taxonomy/presets/interaction-smells.json").read_text("utf-8"))
    codes = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("code"), str):
                codes.add(node["code"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(preset)
    return codes


def test_the_four_detectors_are_registered_by_name_each_for_a_type_of_the_preset():
    assert sorted(REGISTRY) == [
        "code-rollback",
        "must-not-violation",
        "repetitive-response",
        "signature-mismatch",
    ]
    codes = preset_codes()
    for name, detector in REGISTRY.items():
        assert isinstance(detector, Detector)
        assert detector.name == name and detector.version == "1"
        assert detector.smell in codes, detector.smell


def test_get_names_the_known_detectors_when_it_finds_none():
    assert get("code-rollback") is REGISTRY["code-rollback"]
    with pytest.raises(KeyError, match="no detector named 'nope'; known: code-rollback, must-not"):
        get("nope")


class Fixed:
    """A detector that applies to odd turns and scores out of range."""

    name, version, smell = "fixed", "1", "code_rollback"

    def __init__(self):
        self.seen = []

    def applies(self, history, turn):
        self.seen.append((len(history), turn.index))
        return turn.index % 2 == 1

    def score(self, history, turn):
        return (7.0 if turn.index == 1 else -1.0), Evidence((turn.index,), ("q",))


def test_detect_asks_each_turn_with_its_history_and_clamps_scores():
    detector = Fixed()
    turns = [TurnView(i, f"u{i}", f"r{i}") for i in range(4)]
    assert detect(detector, turns) == [
        (1, 1.0, Evidence((1,), ("q",))),
        (3, 0.0, Evidence((3,), ("q",))),
    ]
    assert detector.seen == [(0, 0), (1, 1), (2, 2), (3, 3)]
