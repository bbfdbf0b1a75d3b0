"""Published worked examples reproduce through the report (AGREEMENT.md), and the data of
each is also fed to the library that is the oracle, to show the data are transcribed right."""

from __future__ import annotations

from fractions import Fraction

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from annotation.agreement.stats import agreement_report, fleiss_from_table

from .factories import records_from

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers,
# 12 units, values 1-5, missing data (None); nominal alpha = 0.743. The same data are in the
# `krippendorff` package's docstring.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
VALUES = ["1", "2", "3", "4", "5"]


def _records(coders: dict[str, list], as_labels) -> list[tuple]:
    return [
        (unit, coder, "g", as_labels(value))
        for coder, values in coders.items()
        for unit, value in enumerate(values)
        if value is not None
    ]


def test_it_reproduces_krippendorff_2011_nominal_example():
    records = records_from(_records(KRIPPENDORFF_2011, lambda v: [str(v)]))
    alpha = agreement_report(records, VALUES, n_boot=0)["krippendorff_alpha_nominal"]
    assert round(alpha, 3) == 0.743
    data = [[np.nan if v is None else v for v in vs] for vs in KRIPPENDORFF_2011.values()]
    assert abs(alpha - krippendorff.alpha(data, level_of_measurement="nominal")) < 1e-12


# Krippendorff (2004), Content Analysis, binary data, two observers, 10 units: alpha = 0.095.
KRIPPENDORFF_2004 = {
    "A": [0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
    "B": [1, 1, 1, 0, 0, 1, 0, 0, 0, 0],
}


def test_it_reproduces_krippendorff_2004_binary_example():
    records = records_from(_records(KRIPPENDORFF_2004, lambda v: ["x"] if v else []))
    report = agreement_report(records, ["x"], n_boot=0)
    # the label set as a category ({x} or {}) and the binary label give the same alpha
    assert round(report["krippendorff_alpha_nominal"], 3) == 0.095
    assert round(report["krippendorff_alpha_nominal_per_label"]["x"], 3) == 0.095
    # by hand from the coincidence matrix: o01 = 4, n0 = 14, n1 = 6, n = 20
    assert abs(report["krippendorff_alpha_nominal"] - (1 - 19 * 4 / (14 * 6))) < 1e-12


# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories;
# P-bar = 0.378, P-e = 0.213, kappa = 0.210. (statsmodels' tests use the same table.)
WIKIPEDIA_FLEISS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_it_reproduces_wikipedia_fleiss_example():
    kappa, p_bar, p_e = fleiss_from_table(WIKIPEDIA_FLEISS)
    assert (round(kappa, 3), round(p_bar, 3), round(p_e, 3)) == (0.210, 0.378, 0.213)
    # Fleiss' kappa does not depend on which rater gave which rating: rater r takes the
    # r-th rating of each subject
    rows = []
    for subject, counts in enumerate(WIKIPEDIA_FLEISS):
        ratings = [VALUES[c] for c, k in enumerate(counts) for _ in range(k)]
        rows += [(subject, f"rater{r:02d}", "g", [v]) for r, v in enumerate(ratings)]
    report = agreement_report(records_from(rows), VALUES, n_boot=0)
    assert report["n_annotators"] == 14 and report["n_complete_cards"] == 10
    assert round(report["fleiss_kappa"], 3) == 0.210
    assert abs(report["fleiss_kappa"] - fleiss_kappa(np.array(WIKIPEDIA_FLEISS))) < 1e-12
    assert report["fleiss_kappa_complete_cards"] == report["fleiss_kappa"]


# Wikipedia, "Cohen's kappa", first example: 50 proposals, both yes 20, A yes / B no 5,
# A no / B yes 10, both no 15; po = 0.7, pe = 0.5, kappa = 0.4.
def _cohen_table(both_yes: int, a_only: int, b_only: int, both_no: int) -> list[tuple]:
    pairs = (
        [(["x"], ["x"])] * both_yes
        + [(["x"], [])] * a_only
        + [([], ["x"])] * b_only
        + [([], [])] * both_no
    )
    rows = []
    for card, (a, b) in enumerate(pairs):
        rows += [(card, "alice", "g", a), (card, "bob", "g", b)]
    return rows


def test_it_reproduces_wikipedia_cohen_example():
    report = agreement_report(records_from(_cohen_table(20, 5, 10, 15)), ["x"], n_boot=0)
    pair = report["pairs"]["alice|bob"]
    assert abs(pair["cohen_kappa"] - 0.4) < 1e-12
    assert abs(pair["per_label_kappa"]["x"] - 0.4) < 1e-12
    assert abs(pair["percent_agreement"] - 0.7) < 1e-12
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert abs(cohen_kappa_score(a, b) - 0.4) < 1e-12


def _ac1_by_hand(both_yes: int, a_only: int, b_only: int, both_no: int) -> Fraction:
    # Gwet (2008), two raters, two categories: pe = 2 q (1 - q), q = mean share of "yes"
    n = both_yes + a_only + b_only + both_no
    po = Fraction(both_yes + both_no, n)
    q = Fraction(2 * both_yes + a_only + b_only, 2 * n)
    pe = 2 * q * (1 - q)
    return (po - pe) / (1 - pe)


def test_it_computes_gwet_ac1_and_pabak_as_by_hand():
    # Cohen's example: q = 55/100, pe = 0.495, AC1 = 0.205 / 0.505 = 41/101; PABAK = 0.4
    assert _ac1_by_hand(20, 5, 10, 15) == Fraction(41, 101)
    pair = agreement_report(records_from(_cohen_table(20, 5, 10, 15)), ["x"], n_boot=0)["pairs"][
        "alice|bob"
    ]
    assert abs(pair["per_label_ac1"]["x"] - 41 / 101) < 1e-12
    assert abs(pair["per_label_pabak"]["x"] - 0.4) < 1e-12
    # the kappa paradox: a rare label, 94.4% agreement, kappa below 0 but AC1 high
    # (118 both absent, 5 + 2 disagreements, 0 both present)
    pair = agreement_report(records_from(_cohen_table(0, 5, 2, 118)), ["x"], n_boot=0)["pairs"][
        "alice|bob"
    ]
    # po = 118/125 = 0.944, q = 7/250 = 0.028, pe = 2 * 0.028 * 0.972 = 0.054432,
    # AC1 = 0.889568 / 0.945568 = 27799/29549 = 0.94078
    expected = _ac1_by_hand(0, 5, 2, 118)
    assert expected == Fraction(27799, 29549)
    assert abs(pair["per_label_ac1"]["x"] - float(expected)) < 1e-12
    assert pair["per_label_kappa"]["x"] < 0
    assert abs(pair["per_label_pabak"]["x"] - (2 * 118 / 125 - 1)) < 1e-12
    # set as category: k = 2 ** 1 possible sets, so PABAK is the binary one
    assert abs(pair["pabak"] - pair["per_label_pabak"]["x"]) < 1e-12
