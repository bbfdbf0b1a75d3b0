"""Every key of the report equals scikit-learn / statsmodels / krippendorff on generated data
of many shapes (the oracle: tests/agreement/library_oracle.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotation.agreement.stats import agreement_report, agreement_reports

from .factories import CODES, make_records, records_from
from .library_oracle import assert_matches, library_report

SHAPES = {
    "two groups of two, missing records": dict(
        groups={"g1": ["alice", "bob"], "g2": ["charlie", "dave"]}
    ),
    "group of three, complete": dict(groups={"g": ["alice", "bob", "charlie"]}, missing=0.0),
    "group of three, incomplete": dict(groups={"g": ["alice", "bob", "charlie"]}, missing=0.25),
    "groups of two and three": dict(
        groups={"g1": ["alice", "bob"], "g2": ["charlie", "dave", "erin"]}
    ),
    "four in one group, complete": dict(
        groups={"g": ["alice", "bob", "charlie", "dave"]}, missing=0.0
    ),
    "an annotator in two groups": dict(groups={"g1": ["alice", "bob"], "g2": ["alice", "charlie"]}),
    "sparse labels, mostly empty sets": dict(groups={"g": ["alice", "bob"]}, p=0.05, n_cards=80),
    "dense multi-label": dict(groups={"g": ["alice", "bob", "charlie"]}, p=0.6, missing=0.1),
    "low agreement": dict(groups={"g": ["alice", "bob"]}, agree=0.1),
    "perfect agreement": dict(groups={"g": ["alice", "bob", "charlie"]}, agree=1.0, missing=0.0),
    "one label only": dict(groups={"g": ["alice", "bob"]}, used=("a",), p=0.4),
    "single common card": dict(groups={"g": ["alice", "bob"]}, n_cards=1, missing=0.0),
    "three cards, three annotators": dict(groups={"g": ["alice", "bob", "charlie"]}, n_cards=3),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_it_equals_the_libraries(shape, seed):
    records = make_records(seed, **SHAPES[shape])
    consensus = {
        card: labels for card, labels in zip(records["card"], records["labels"], strict=True)
    }
    ours = agreement_report(records, CODES, consensus, n_boot=50, seed=seed)
    assert_matches(ours, library_report(records, CODES, consensus))
    json.dumps(ours, allow_nan=False)


HAND_MADE = {
    "both annotators give the empty set on every card": [
        (c, a, "g", []) for c in range(5) for a in ("alice", "bob")
    ],
    "each annotator constant, different values": [(c, "alice", "g", ["a"]) for c in range(4)]
    + [(c, "bob", "g", []) for c in range(4)],
    "one constant rater": [(c, "alice", "g", ["a"]) for c in range(4)]
    + [(c, "bob", "g", ["a"] if c % 2 else ["b"]) for c in range(4)],
    "a pair with no common card": [
        (0, "alice", "g", ["a"]),
        (1, "bob", "g", ["b"]),
        (2, "charlie", "g", []),
        (2, "alice", "g", []),
    ],
    "one annotator": [(c, "alice", "g", ["a"]) for c in range(3)],
    "three annotators, every one constant and equal": [
        (c, a, "g", ["b"]) for c in range(3) for a in ("alice", "bob", "charlie")
    ],
    "three annotators, no card rated by all": [
        (0, "alice", "g", ["a"]),
        (0, "bob", "g", ["a"]),
        (1, "bob", "g", []),
        (1, "charlie", "g", ["b"]),
    ],
    "values differ only on cards with one record": [
        (0, "alice", "g", ["a"]),
        (0, "bob", "g", ["a"]),
        (1, "alice", "g", ["b"]),
    ],
    "annotators of different groups on the same card": [
        (0, "alice", "g1", ["a"]),
        (0, "bob", "g1", ["a", "b"]),
        (0, "charlie", "g2", ["b"]),
        (1, "alice", "g1", []),
        (1, "bob", "g1", []),
        (1, "charlie", "g2", ["c"]),
    ],
    "integer card ids, unsorted rows": [
        (7, "bob", "g", ["a"]),
        (3, "alice", "g", ["b"]),
        (7, "alice", "g", ["a"]),
        (3, "bob", "g", []),
        (5, "alice", "g", ["c"]),
        (5, "bob", "g", ["c", "a"]),
    ],
}


@pytest.mark.parametrize("case", list(HAND_MADE))
def test_it_equals_the_libraries_on_degenerate_data(case):
    records = records_from(HAND_MADE[case])
    ours = agreement_report(records, CODES, n_boot=20)
    assert_matches(ours, library_report(records, CODES))
    json.dumps(ours, allow_nan=False)


def test_it_reports_no_records_as_undefined():
    records = pd.DataFrame(columns=["card", "annotator", "group", "labels"])
    ours = agreement_report(records, CODES)
    assert ours["n_cards"] == 0
    assert ours["pairs"] == {}
    assert ours["group_mean"]["cohen_kappa"] is None
    assert ours["krippendorff_alpha_nominal"] is None
    assert ours["krippendorff_alpha_nominal_reason"].startswith("undefined")
    json.dumps(ours, allow_nan=False)


def test_it_reports_every_axis():
    smell = make_records(0, {"g": ["alice", "bob"]})
    outcome = make_records(1, {"g": ["alice", "bob"]}, used=("a", "b"), p=0.5)
    reports = agreement_reports({"smell": (smell, CODES), "outcome": (outcome, ["a", "b"], {})})
    assert set(reports) == {"smell", "outcome"}
    assert_matches(reports["smell"], library_report(smell, CODES))
    assert_matches(reports["outcome"], library_report(outcome, ["a", "b"]))
    assert set(reports["outcome"]["pairs"]["alice|bob"]["per_label_kappa"]) == {"a", "b"}
