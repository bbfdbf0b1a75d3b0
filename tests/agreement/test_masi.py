"""Krippendorff's alpha with MASI distance.

Which oracle is which:
- nltk (AnnotationTask.alpha with nltk.metrics.distance.masi_distance) where it is defined
  and matches AGREEMENT.md: data without empty label sets (nltk 3.10 uses M = 2/3 and 1/3
  exactly; old nltk used 0.67 / 0.33, which would not match);
- nltk's alpha with nltk's masi_distance wrapped to give distance(empty, empty) = 0, where
  the data have empty sets (plain nltk divides by zero there);
- the slow loop `alpha_reference` with `masi_reference` (library_oracle.py), straight from
  the definition, everywhere, including the degenerate cases where nltk returns its
  convention of 1 and the contract says null."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from nltk.metrics.distance import masi_distance as nltk_masi_distance

from annotation.agreement.stats import agreement_report, masi_distance

from .factories import CODES, make_records, records_from
from .library_oracle import (
    alpha_reference,
    masi_alpha_nltk,
    masi_reference,
    nltk_masi_fixed,
)

SETS = [frozenset(s) for r in range(4) for s in itertools.combinations("abc", r)]


def _mask(labels: frozenset) -> int:
    return sum(1 << "abc".index(x) for x in labels)


def test_it_gives_passonneau_distances_for_every_pair_of_sets():
    a = np.array([_mask(x) for x, _ in itertools.product(SETS, SETS)], dtype=np.uint64)
    b = np.array([_mask(y) for _, y in itertools.product(SETS, SETS)], dtype=np.uint64)
    ours = masi_distance(a, b)
    for k, (x, y) in enumerate(itertools.product(SETS, SETS)):
        assert abs(ours[k] - masi_reference(x, y)) < 1e-15
        if x or y:
            assert abs(ours[k] - nltk_masi_distance(set(x), set(y))) < 1e-15
    # the worked values: subset 1 - 1/2 * 2/3, overlap 1 - 1/3 * 1/3, disjoint 1
    assert abs(masi_reference(frozenset("a"), frozenset("ab")) - 2 / 3) < 1e-15
    assert abs(masi_reference(frozenset("ab"), frozenset("bc")) - 8 / 9) < 1e-15
    assert masi_reference(frozenset(), frozenset("a")) == 1.0


def _by_card(records):
    data = {(r.card, r.annotator): frozenset(r.labels) for r in records.itertuples()}
    units: dict = {}
    for (card, _), labels in data.items():
        units.setdefault(card, []).append(labels)
    return data, list(units.values())


@pytest.mark.parametrize("seed", range(4))
def test_it_equals_nltk_on_sets_never_empty(seed):
    records = make_records(seed, {"g": ["alice", "bob", "charlie"]}, p=0.4, agree=0.5)
    records = records[records["labels"].map(len) > 0]
    data, units = _by_card(records)
    ours = agreement_report(records, CODES, n_boot=0)["krippendorff_alpha_masi"]
    assert abs(ours - masi_alpha_nltk(data, nltk_masi_distance)) < 1e-9
    assert abs(ours - alpha_reference(units, masi_reference)) < 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_it_equals_nltk_with_empty_sets_at_distance_zero(seed):
    records = make_records(seed, {"g1": ["alice", "bob"], "g2": ["charlie", "dave", "erin"]}, p=0.2)
    assert (records["labels"].map(len) == 0).any()
    data, units = _by_card(records)
    ours = agreement_report(records, CODES, n_boot=0)["krippendorff_alpha_masi"]
    assert abs(ours - masi_alpha_nltk(data, nltk_masi_fixed)) < 1e-9
    assert abs(ours - alpha_reference(units, masi_reference)) < 1e-9


def test_it_equals_the_nominal_alpha_when_every_set_has_at_most_one_label():
    # MASI of two distinct singletons (or a singleton and the empty set) is 1: nominal
    records = make_records(3, {"g": ["alice", "bob", "charlie"]}, used=("a",), p=0.5)
    report = agreement_report(records, CODES, n_boot=0)
    assert abs(report["krippendorff_alpha_masi"] - report["krippendorff_alpha_nominal"]) < 1e-12


def test_it_gives_partial_credit_for_overlapping_sets():
    rows = [(0, "alice", "g", ["a", "b"]), (0, "bob", "g", ["a"])]
    rows += [(1, "alice", "g", ["c"]), (1, "bob", "g", ["c"])]
    rows += [(2, "alice", "g", []), (2, "bob", "g", [])]
    report = agreement_report(records_from(rows), CODES, n_boot=0)
    _, units = _by_card(records_from(rows))
    assert abs(report["krippendorff_alpha_masi"] - alpha_reference(units, masi_reference)) < 1e-12
    assert report["krippendorff_alpha_masi"] > report["krippendorff_alpha_nominal"]


def test_it_reports_one_set_on_every_pairable_record_as_undefined():
    # nltk returns 1 here by convention; the contract says 0/0 is null
    rows = [(c, a, "g", ["a"]) for c in range(3) for a in ("alice", "bob")]
    report = agreement_report(records_from(rows), CODES, n_boot=0)
    assert report["krippendorff_alpha_masi"] is None
    assert "one and the same label set" in report["krippendorff_alpha_masi_reason"]
