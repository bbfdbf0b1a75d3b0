"""One annotator (a student, or an LLM judge imported as an annotator) against the consensus,
checked against scikit-learn."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

from annotation.agreement.versus import versus_reference

from .factories import CODES, make_records, records_from


def _none(value):
    return None if math.isnan(value) else float(value)


def _close(ours, theirs):
    if theirs is None:
        return ours is None
    return ours is not None and abs(ours - theirs) < 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_it_equals_sklearn(seed):
    records = make_records(seed, {"g": ["alice", "judge"]}, agree=0.6, missing=0.1)
    reference = {
        card: labels for card, labels in zip(records["card"], records["labels"], strict=True)
    }
    # the consensus disagrees with everyone now and then; some cards have no consensus yet
    rng = np.random.default_rng(seed)
    reference = {
        c: (frozenset({"b"}) if rng.random() < 0.2 else s)
        for c, s in reference.items()
        if rng.random() < 0.9
    }
    report = versus_reference(records, reference, CODES)
    assert set(report) == {"alice", "judge"}
    for annotator, ours in report.items():
        mine = records[(records["annotator"] == annotator) & records["card"].isin(list(reference))]
        truth = [reference[c] for c in mine["card"]]
        given = list(mine["labels"])
        y_true = np.array([[code in s for code in CODES] for s in truth], dtype=int)
        y_pred = np.array([[code in s for code in CODES] for s in given], dtype=int)
        assert ours["n_cards"] == len(mine)
        assert abs(ours["accuracy"] - accuracy_score(y_true, y_pred)) < 1e-12
        ids: dict = {}
        kappa = cohen_kappa_score(
            [ids.setdefault(s, len(ids)) for s in truth],
            [ids.setdefault(s, len(ids)) for s in given],
        )
        assert abs(ours["cohen_kappa"] - kappa) < 1e-9
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p, r, f, _ = precision_recall_fscore_support(
                y_true, y_pred, average=None, zero_division=np.nan
            )
            kappas = [
                _none(cohen_kappa_score(y_true[:, k], y_pred[:, k])) for k in range(len(CODES))
            ]
        for k, code in enumerate(CODES):
            assert _close(ours["precision"][code], _none(p[k])), (annotator, code)
            assert _close(ours["recall"][code], _none(r[k])), (annotator, code)
            assert _close(ours["f1"][code], _none(f[k])), (annotator, code)
            assert _close(ours["per_label_kappa"][code], kappas[k]), (annotator, code)


def test_it_explains_undefined_precision_and_recall():
    records = records_from([(0, "judge", "g", ["a"]), (1, "judge", "g", []), (2, "judge", "g", [])])
    report = versus_reference(records, {0: ["b"], 1: [], 2: ["b"], 9: ["a"]}, CODES)["judge"]
    assert report["n_cards"] == 3
    assert report["accuracy"] == 1 / 3
    assert report["precision"]["b"] is None
    assert report["precision_reason"]["b"] == "undefined: the annotator never gave the label"
    assert report["recall"]["b"] == 0.0
    assert report["f1"]["b"] == 0.0
    assert report["recall"]["a"] is None
    assert report["recall_reason"]["a"] == "undefined: the reference never has the label"
    assert report["f1"]["c"] is None


def test_it_needs_no_group_column_and_no_common_card_is_not_a_crash():
    records = records_from([(0, "judge", "g", ["a"])]).drop(columns="group")
    report = versus_reference(records, {5: ["a"]}, CODES)["judge"]
    assert report["n_cards"] == 0
    assert report["accuracy"] is None
    assert report["cohen_kappa_reason"] == "undefined: no card has both a record and a reference"
