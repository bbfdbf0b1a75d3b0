"""Undefined values are null with a reason, never NaN, never a crash."""

from __future__ import annotations

import json

from annotation.agreement.stats import agreement_report

from .factories import CODES, make_records, records_from


def test_it_explains_a_kappa_of_two_identical_constant_raters():
    rows = [(c, a, "g", []) for c in range(5) for a in ("alice", "bob")]
    report = agreement_report(records_from(rows), CODES, n_boot=0)
    pair = report["pairs"]["alice|bob"]
    assert pair["percent_agreement"] == 1.0
    assert pair["cohen_kappa"] is None
    assert "expected agreement 1" in pair["cohen_kappa_reason"]
    assert pair["per_label_kappa"] == dict.fromkeys(CODES)
    assert pair["per_label_kappa_reason"]["a"] == (
        "undefined: neither annotator gave the label on the common cards"
    )
    assert pair["per_label_kappa_macro"] is None
    assert pair["per_label_kappa_macro_n_defined"] == 0
    # PABAK and AC1 stay defined where kappa is not: that is what they are for
    assert pair["per_label_pabak"]["a"] == 1.0
    assert pair["per_label_ac1"]["a"] == 1.0
    assert report["group_mean"]["cohen_kappa"] is None
    assert report["group_mean"]["cohen_kappa_reason"] == "undefined: no pair has a defined value"
    json.dumps(report, allow_nan=False)


def test_it_scores_two_different_constant_raters_zero_as_sklearn():
    rows = [(c, "alice", "g", ["a"]) for c in range(3)] + [(c, "bob", "g", []) for c in range(3)]
    pair = agreement_report(records_from(rows), CODES, n_boot=0)["pairs"]["alice|bob"]
    assert pair["cohen_kappa"] == 0.0
    assert pair["per_label_kappa"]["a"] == 0.0


def test_it_skips_a_label_nobody_used_in_the_macro_mean():
    records = make_records(0, {"g": ["alice", "bob"]}, missing=0.0)
    pair = agreement_report(records, CODES, n_boot=0)["pairs"]["alice|bob"]
    assert pair["per_label_kappa"]["unused"] is None
    assert set(pair["per_label_kappa_reason"]) == {"unused"}
    assert pair["per_label_kappa_macro_n_defined"] == 4
    defined = [pair["per_label_kappa"][c] for c in "abcd"]
    assert abs(pair["per_label_kappa_macro"] - sum(defined) / 4) < 1e-12


def test_it_explains_a_pair_without_common_cards():
    rows = [(0, "alice", "g", ["a"]), (1, "bob", "g", ["a"])]
    report = agreement_report(records_from(rows), CODES, n_boot=10)
    pair = report["pairs"]["alice|bob"]
    assert pair["n_common_cards"] == 0
    assert pair["percent_agreement"] is None
    assert pair["cohen_kappa_reason"] == "undefined: the two annotators have no common card"
    assert report["n_pairable_cards"] == 0
    assert report["percent_agreement_all"] is None
    assert report["krippendorff_alpha_nominal_reason"] == (
        "undefined: no card has records from two annotators"
    )


def test_it_does_not_compute_fleiss_for_fewer_than_three_annotators():
    report = agreement_report(make_records(0, {"g": ["alice", "bob"]}, missing=0.0), CODES)
    assert report["fleiss_kappa"] is None
    assert (
        report["fleiss_kappa_reason"] == "not applicable: Fleiss' kappa needs at least 3 annotators"
    )
    assert report["fleiss_kappa_complete_cards"] is None
    assert report["n_complete_cards"] == 40


def test_it_computes_fleiss_on_complete_cards_only_for_incomplete_data():
    records = make_records(1, {"g": ["alice", "bob", "charlie"]}, missing=0.2)
    report = agreement_report(records, CODES, n_boot=0)
    assert report["fleiss_kappa"] is None
    assert report["fleiss_kappa_reason"].startswith("not applicable: incomplete data")
    assert 0 < report["n_complete_cards"] < report["n_cards"]
    assert isinstance(report["fleiss_kappa_complete_cards"], float)


def test_it_reports_prevalence_only_with_a_consensus():
    records = make_records(2, {"g": ["alice", "bob"]})
    report = agreement_report(records, CODES, n_boot=0)
    assert report["prevalence"] == dict.fromkeys(CODES)
    assert report["prevalence_reason"]["a"] == "undefined: no consensus labels"
    consensus = {"c1": ["a"], "c2": ["a", "b"], "c3": [], "c4": frozenset({"c"})}
    report = agreement_report(records, CODES, consensus, n_boot=0)
    assert report["prevalence"] == {"a": 0.5, "b": 0.25, "c": 0.25, "d": 0.0, "unused": 0.0}
    assert "prevalence_reason" not in report
