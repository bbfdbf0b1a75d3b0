"""The episode measures (annotation/episodes/measures.py) against independent computations:
statsmodels' Wilson interval, scikit-learn's kappa, the krippendorff package's alpha, scipy's
the Fisher exact test on tables counted here, and a naive matcher on set-based IoU."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import fisher_exact
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotation.episodes import measures

try:
    import krippendorff
except ImportError:  # pragma: no cover - the dev requirements install it
    krippendorff = None


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_statsmodels_wilson(kn):
    k, n = kn
    low, high = measures.wilson(k, n)
    ref = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(ref[0], abs=1e-9) and high == pytest.approx(ref[1], abs=1e-9)


def test_wilson_of_nothing_is_undefined():
    assert measures.wilson(0, 0) == (None, None)


pairs = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), min_size=1)


@pytest.mark.filterwarnings("ignore")
@given(pairs)
def test_kappa_is_scikit_learns(items):
    a, b = zip(*items, strict=True)
    ours = measures.cohen_kappa(a, b)
    with np.errstate(all="ignore"):
        ref = cohen_kappa_score(a, b)
    if math.isnan(ref):  # chance agreement 1: scikit-learn gives nan
        assert ours in (1.0, None)
    else:
        assert ours == pytest.approx(ref, abs=1e-9)


units = st.lists(st.lists(st.sampled_from([0, 1, 2]), min_size=0, max_size=4), min_size=1)


@pytest.mark.skipif(krippendorff is None, reason="the krippendorff package is not installed")
@given(units)
def test_alpha_is_the_krippendorff_packages(values):
    ours = measures.krippendorff_alpha(values)
    raters = max(len(u) for u in values)
    data = np.full((max(raters, 1), len(values)), np.nan)
    for k, unit in enumerate(values):
        data[: len(unit), k] = unit
    pairable = [u for u in values if len(u) >= 2]
    if ours is None:
        # undefined: nothing pairable or one value throughout
        assert not pairable or len({v for u in pairable for v in u}) == 1
        return
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert ours == pytest.approx(ref, abs=1e-9)


def _set_iou(a, b):
    x, y = set(range(a[0], a[1] + 1)), set(range(b[0], b[1] + 1))
    return len(x & y) / len(x | y)


ranges = st.tuples(st.integers(1, 12), st.integers(0, 4)).map(lambda t: (t[0], t[0] + t[1]))


@given(ranges, ranges)
def test_iou_is_shared_turns_over_either(a, b):
    assert measures.iou(a, b) == pytest.approx(_set_iou(a, b))


def _naive_greedy(a, b, threshold):
    """AGREEMENT.md's rule written out plainly: while some free pair reaches the threshold,
    take the one of highest set-based IoU, ties by the earliest start (a's, then b's), then
    by position."""
    free_a, free_b, taken = set(range(len(a))), set(range(len(b))), []
    while True:
        best = None
        for i in sorted(free_a):
            for j in sorted(free_b):
                score = _set_iou(a[i], b[j])
                if score < threshold:
                    continue
                key = (-score, a[i][0], b[j][0], i, j)
                if best is None or key < best[0]:
                    best = (key, i, j, score)
        if best is None:
            return taken
        _, i, j, score = best
        free_a.discard(i)
        free_b.discard(j)
        taken.append((i, j, score))


@given(st.lists(ranges, max_size=7), st.lists(ranges, max_size=7), st.sampled_from([0.3, 0.5, 1.0]))
def test_the_matching_is_agreement_mds_greedy_rule(a, b, threshold):
    pairs = measures.match_ranges(a, b, threshold)
    expected = _naive_greedy(a, b, threshold)
    assert [(i, j) for i, j, _ in pairs] == [(i, j) for i, j, _ in expected]
    for (_, _, score), (_, _, naive) in zip(pairs, expected, strict=True):
        assert score == pytest.approx(naive) and score >= threshold
    # maximal: no pair left over reaches the threshold with both its episodes free
    used_a, used_b = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
    assert not any(
        _set_iou(x, y) >= threshold
        for i, x in enumerate(a) if i not in used_a
        for j, y in enumerate(b) if j not in used_b
    )  # fmt: skip


def test_the_greedy_rule_takes_the_best_pair_first_even_if_fewer_pairs_result():
    """AGREEMENT.md's matching is greedy, not a maximum matching: (2, 3) pairs with its exact
    twin first, so (1, 3), whose only partner that was, stays unmatched, where a maximum
    matching would pair (2, 3)~(3, 3) and (1, 3)~(2, 3)."""
    assert measures.match_ranges([(2, 3), (1, 3)], [(2, 3), (3, 3)], 0.5) == [(0, 0, 1.0)]
    # ties by the earliest start
    assert measures.match_ranges([(3, 4), (1, 2)], [(1, 2), (3, 4)], 0.5) == [
        (1, 0, 1.0),
        (0, 1, 1.0),
    ]


SYMPTOMS = ["s1", "s2", "s3"]
CAUSES = ["c1", "c2"]
gold = st.lists(
    st.fixed_dictionaries(
        {
            "symptom": st.lists(st.sampled_from(SYMPTOMS), unique=True, max_size=3),
            "cause": st.lists(st.sampled_from(CAUSES), unique=True, max_size=2),
        }
    ),
    max_size=60,
)


@given(gold)
def test_cooccurrence_is_counted_and_tested_as_scipy_would(episodes):
    codes = {"symptom": SYMPTOMS, "cause": CAUSES}
    table = measures.cooccurrence(episodes, "symptom", "cause", codes)
    assert len(table["cells"]) == len(SYMPTOMS) * len(CAUSES)
    n = len(episodes)
    for cell in table["cells"]:
        r, c = cell["row"], cell["col"]
        both = sum(1 for g in episodes if r in g["symptom"] and c in g["cause"])
        only_r = sum(1 for g in episodes if r in g["symptom"] and c not in g["cause"])
        only_c = sum(1 for g in episodes if r not in g["symptom"] and c in g["cause"])
        neither = n - both - only_r - only_c
        assert cell["observed"] == both
        n_r, n_c = both + only_r, both + only_c
        assert cell["expected"] == pytest.approx(n_r * n_c / n if n else 0)
        if cell["expected"]:
            assert cell["lift"] == pytest.approx(both / cell["expected"])
        t = [[both, only_r], [only_c, neither]]
        if not n:
            assert cell["test"] is None  # no episode: no table
            continue
        # AGREEMENT.md: the two-sided Fisher exact test on the 2x2 table, whatever the counts
        assert cell["test"] == "fisher"
        assert cell["p"] == pytest.approx(fisher_exact(t, alternative="two-sided")[1])


def test_symptom_pairs_are_each_counted_once():
    episodes = [{"symptom": ["s1", "s2"]}, {"symptom": ["s1"]}, {"symptom": ["s2", "s3"]}]
    table = measures.cooccurrence(episodes, "symptom", "symptom", {"symptom": SYMPTOMS})
    assert [(x["row"], x["col"], x["observed"]) for x in table["cells"]] == [
        ("s1", "s2", 1), ("s1", "s3", 0), ("s2", "s3", 1)
    ]  # fmt: skip
    assert table["cells"][0]["expected"] == pytest.approx(2 * 2 / 3)
    assert measures.heatmap_svg(table).startswith("<svg")


@given(st.lists(st.sampled_from([0, 1, 2]), min_size=1, max_size=30), st.integers(0, 9))
def test_bootstrap_mean_is_seeded_and_brackets_the_mean(values, seed):
    one = measures.bootstrap_mean(values, seed=seed, n_boot=300)
    assert one == measures.bootstrap_mean(values, seed=seed, n_boot=300)
    assert one["mean"] == pytest.approx(np.mean(values))
    assert 0 <= one["low"] <= one["high"] <= 2


judgement_pairs = st.lists(
    st.tuples(
        st.booleans(), st.booleans(),
        st.sampled_from(SYMPTOMS), st.sampled_from(SYMPTOMS),
    ),
    min_size=2, max_size=25,
)  # fmt: skip


@pytest.mark.filterwarnings("ignore")
@given(judgement_pairs)
def test_agreement_per_axis_is_scikit_learns_kappa_and_the_packages_alpha(items):
    judgements = []
    for e, (valid_a, valid_b, sym_a, sym_b) in enumerate(items):
        for who, valid, sym in (("ann", valid_a, sym_a), ("bob", valid_b, sym_b)):
            judgements.append({
                "episode": e, "group": "G", "annotator": who, "round": 1, "valid": valid,
                "invalid_reason": "" if valid else "other",
                "labels": {"symptom": [sym]} if valid else {},
            })  # fmt: skip
    result = measures.agreement(judgements, ["symptom"])
    pair = result["pairs"][0]["axes"]
    a = [v[0] for v in items]
    b = [v[1] for v in items]
    ref = cohen_kappa_score(a, b)
    if not math.isnan(ref):
        assert pair["validity"]["kappa"] == pytest.approx(ref)
    assert pair["validity"]["exact"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    both = [(x[2], x[3]) for x in items if x[0] and x[1]]
    assert pair["symptom"]["n"] == len(both)
    if both:
        sa, sb = zip(*both, strict=True)
        ref = cohen_kappa_score(sa, sb)
        if not math.isnan(ref):
            assert pair["symptom"]["kappa"] == pytest.approx(ref)
    if krippendorff is not None and len(set(a + b)) > 1:
        data = np.array([a, b], dtype=float)
        alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert result["axes"]["validity"]["alpha"] == pytest.approx(alpha)
    whole = sum(x[0] == x[1] and (not x[0] or x[2] == x[3]) for x in items) / len(items)
    assert result["exact_match_all_axes"] == pytest.approx(whole)
