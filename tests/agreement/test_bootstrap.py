"""Bootstrap confidence intervals of the pair and group kappas."""

from __future__ import annotations

from collections import Counter

import numpy as np

from annotation.agreement.stats import agreement_report

from .factories import CODES, make_records, records_from

GROUPS = {"g1": ["alice", "bob"], "g2": ["charlie", "dave", "erin"]}


def test_it_is_reproducible_with_a_seed():
    records = make_records(0, GROUPS, n_cards=60)
    first = agreement_report(records, CODES, n_boot=300, seed=7)
    second = agreement_report(records, CODES, n_boot=300, seed=7)
    other = agreement_report(records, CODES, n_boot=300, seed=8)
    assert first == second
    assert (
        first["pairs"]["alice|bob"]["cohen_kappa_ci"]
        != other["pairs"]["alice|bob"]["cohen_kappa_ci"]
    )


def test_it_brackets_the_kappa():
    records = make_records(1, GROUPS, n_cards=80)
    report = agreement_report(records, CODES, n_boot=500)
    overall = report["group_mean"]
    for stats in [*report["pairs"].values(), *report["groups"].values(), overall]:
        lo, hi = stats["cohen_kappa_ci"]
        assert -1 <= lo < stats["cohen_kappa"] < hi <= 1


def test_the_overall_mean_of_one_pair_gets_the_pair_interval():
    records = make_records(3, {"g1": ["alice", "bob"]}, n_cards=50)
    report = agreement_report(records, CODES, n_boot=200)
    assert report["group_mean"]["cohen_kappa_ci"] == report["pairs"]["alice|bob"]["cohen_kappa_ci"]


def test_it_gives_a_group_of_one_pair_its_pair_interval():
    records = make_records(2, GROUPS, n_cards=50)
    report = agreement_report(records, CODES, n_boot=200)
    assert (
        report["groups"]["g1"]["cohen_kappa_ci"] == report["pairs"]["alice|bob"]["cohen_kappa_ci"]
    )


def _kappa(x: list, y: list) -> float | None:
    # textbook Cohen's kappa (the formula is checked against sklearn elsewhere)
    n = len(x)
    po = sum(u == v for u, v in zip(x, y, strict=True)) / n
    cx, cy = Counter(x), Counter(y)
    pe = sum(cx[k] * cy[k] for k in cx) / (n * n)
    return None if pe == 1 else (po - pe) / (1 - pe)


def _naive_percentiles(records, pairs, n_boot, seed):
    """Resample the group's cards one by one with replacement and average the pairs' kappas."""
    data = {(r.card, r.annotator): r.labels for r in records.itertuples()}
    cards = sorted({c for c, a in data if any(a in p for p in pairs)})
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(n_boot):
        drawn = [cards[k] for k in rng.choice(len(cards), size=len(cards))]
        kappas = []
        for a, b in pairs:
            common = [c for c in drawn if (c, a) in data and (c, b) in data]
            kappa = _kappa([data[(c, a)] for c in common], [data[(c, b)] for c in common])
            if kappa is not None:
                kappas.append(kappa)
        if kappas:
            means.append(np.mean(kappas))
    return np.percentile(means, [2.5, 97.5])


def test_it_matches_resampling_the_cards_one_by_one():
    # the report draws a multinomial over distinct label patterns, which has the distribution
    # of resampling cards; with 2000 resamples each, the percentiles agree to Monte Carlo error
    records = make_records(4, {"g": ["alice", "bob", "charlie"]}, n_cards=60, missing=0.2)
    report = agreement_report(records, CODES, n_boot=2000, seed=1)
    pairs = [("alice", "bob"), ("alice", "charlie"), ("bob", "charlie")]
    lo, hi = _naive_percentiles(records, pairs, 2000, seed=2)
    ours_lo, ours_hi = report["groups"]["g"]["cohen_kappa_ci"]
    assert abs(ours_lo - lo) < 0.03 and abs(ours_hi - hi) < 0.03
    lo, hi = _naive_percentiles(records, [("alice", "bob")], 2000, seed=3)
    ours_lo, ours_hi = report["pairs"]["alice|bob"]["cohen_kappa_ci"]
    assert abs(ours_lo - lo) < 0.03 and abs(ours_hi - hi) < 0.03


def test_it_switches_off_with_zero_resamples():
    report = agreement_report(make_records(0, GROUPS), CODES, n_boot=0)
    pair = report["pairs"]["alice|bob"]
    assert pair["cohen_kappa_ci"] is None
    assert pair["cohen_kappa_ci_reason"].startswith("not applicable")


def test_it_has_no_interval_for_an_undefined_kappa():
    rows = [(c, a, "g", []) for c in range(4) for a in ("alice", "bob")]
    pair = agreement_report(records_from(rows), CODES, n_boot=100)["pairs"]["alice|bob"]
    assert pair["cohen_kappa"] is None
    assert pair["cohen_kappa_ci"] is None
    assert pair["cohen_kappa_ci_reason"] == "undefined: the kappa itself is undefined"
