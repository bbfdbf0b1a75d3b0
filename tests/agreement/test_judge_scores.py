"""A machine judge's scores against the gold (issue 22 point 5, annotation/agreement/judges.py):
the point estimates equal scikit-learn's on generated studies (hypothesis), the intervals the
straightforward resampling of conversations, the precision-recall curve scikit-learn's
precision and recall at each threshold, and the development split is seeded and keeps the
conversations whole."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_recall_fscore_support,
    precision_score,
    recall_score,
)

from annotation.agreement.judges import (
    best_threshold,
    dev_split,
    dev_test,
    model_vs_model,
    pr_curves,
    versus_sets,
)

CODES = ["a", "b", "c"]


def _close(ours, theirs) -> bool:
    if ours is None:
        return theirs is None or math.isnan(theirs)
    return (
        theirs is not None and not math.isnan(theirs) and math.isclose(ours, theirs, abs_tol=1e-9)
    )


def _indicator(sets) -> np.ndarray:
    return np.array([[c in s for c in CODES] for s in sets], dtype=int).reshape(-1, len(CODES))


label_sets = st.frozensets(st.sampled_from(CODES), max_size=3)


@st.composite
def studies(draw):
    n = draw(st.integers(1, 25))
    gold = [draw(label_sets) for _ in range(n)]
    judge = [draw(label_sets) for _ in range(n)]
    conversation = [draw(st.integers(0, 5)) for _ in range(n)]
    return gold, judge, conversation


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(studies())
def test_point_estimates_equal_scikit_learn(study):
    gold, judge, conversation = study
    cards = range(len(gold))
    report = versus_sets(
        {"judge": dict(zip(cards, judge, strict=True))},
        dict(zip(cards, gold, strict=True)),
        dict(zip(cards, conversation, strict=True)),
        CODES,
        n_boot=0,
    )["judge"]
    y_true, y_pred = _indicator(gold), _indicator(judge)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, f, support = precision_recall_fscore_support(
            y_true, y_pred, average=None, zero_division=np.nan, labels=range(len(CODES))
        )
        assert _close(report["accuracy"], accuracy_score(y_true, y_pred))
        assert _close(
            report["macro_f1"], f1_score(y_true, y_pred, average="macro", zero_division=np.nan)
        )
        assert _close(
            report["micro_f1"], f1_score(y_true, y_pred, average="micro", zero_division=np.nan)
        )
        ids: dict = {}
        kappa = cohen_kappa_score(
            [ids.setdefault(s, len(ids)) for s in gold],
            [ids.setdefault(s, len(ids)) for s in judge],
        )
        assert _close(report["cohen_kappa"], kappa)
        for k, code in enumerate(CODES):
            assert _close(report["precision"][code], p[k])
            assert _close(report["recall"][code], r[k])
            assert _close(report["f1"][code], f[k])
            assert report["support"][code] == support[k]
            assert _close(
                report["per_label_kappa"][code], cohen_kappa_score(y_true[:, k], y_pred[:, k])
            )
    assert report["n_conversations"] == len(set(conversation))


def _naive_interval(gold, judge, conversation, measure, n_boot, seed):
    """The definition written out: conversations ascending, one rng.integers draw of K per
    resample, every card of each drawn conversation, scikit-learn on the resample."""
    conversations = sorted(set(conversation))
    rows = {c: [i for i, x in enumerate(conversation) if x == c] for c in conversations}
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        drawn = rng.integers(0, len(conversations), size=len(conversations))
        idx = [i for d in drawn for i in rows[conversations[d]]]
        y_true = _indicator([gold[i] for i in idx])
        y_pred = _indicator([judge[i] for i in idx])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if measure == "micro_f1":
                v = f1_score(y_true, y_pred, average="micro", zero_division=np.nan)
            elif measure == "accuracy":
                v = accuracy_score(y_true, y_pred)
            else:
                v = precision_recall_fscore_support(
                    y_true, y_pred, average=None, zero_division=np.nan, labels=range(3)
                )[2][0]
        values.append(v)
    defined = [v for v in values if not math.isnan(v)]
    return [float(x) for x in np.percentile(defined, [2.5, 97.5])]


@pytest.mark.parametrize("seed", range(3))
def test_intervals_are_the_straightforward_resampling_of_conversations(seed):
    rng = np.random.default_rng(seed)
    n = 30
    gold = [frozenset(c for c in CODES if rng.random() < 0.4) for _ in range(n)]
    judge = [g if rng.random() < 0.7 else frozenset({"a"}) for g in gold]
    conversation = [int(x) * 3 + 1 for x in rng.integers(0, 8, n)]
    cards = range(n)
    report = versus_sets(
        {"judge": dict(zip(cards, judge, strict=True))},
        dict(zip(cards, gold, strict=True)),
        dict(zip(cards, conversation, strict=True)),
        CODES,
        n_boot=120,
        seed=seed,
    )["judge"]
    for measure in ("micro_f1", "accuracy"):
        naive = _naive_interval(gold, judge, conversation, measure, 120, seed)
        assert report[f"{measure}_ci"] == pytest.approx(naive)
    assert report["f1_ci"]["a"] == pytest.approx(
        _naive_interval(gold, judge, conversation, "f1_a", 120, seed)
    )


def test_model_vs_model_is_kappa_and_exact_match_on_the_common_cards():
    a = (np.array([1, 2, 3, 4, 5]), np.array([1, 0, 3, 1, 2], dtype=np.uint64))
    b = (np.array([2, 3, 4, 5, 6]), np.array([0, 1, 1, 2, 7], dtype=np.uint64))
    conversation = {1: 10, 2: 10, 3: 11, 4: 12, 5: 12, 6: 13}
    report = model_vs_model(CODES, a, b, conversation, n_boot=50, seed=1)
    assert report["n_cards"] == 4 and report["n_conversations"] == 3
    assert report["accuracy"] == pytest.approx(3 / 4)
    assert report["per_label_kappa"]["b"] == pytest.approx(
        cohen_kappa_score([0, 1, 0, 1], [0, 0, 0, 1])
    )
    assert report["accuracy_ci"] is not None and "precision" not in report


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.sampled_from([0.1, 0.3, 0.5, 0.9])), st.booleans()),
        min_size=1,
        max_size=30,
    )
)
def test_the_pr_curve_is_scikit_learns_precision_and_recall_at_each_threshold(cards):
    scores = np.array([[np.nan if s is None else s] for s, _ in cards])
    truth = np.array([[t] for _, t in cards])
    curve = pr_curves(["a"], scores, truth)["a"]
    assert [p[0] for p in curve["points"]] == sorted({s for s, _ in cards if s is not None})[::-1]
    y_true = truth[:, 0].astype(int)
    for threshold, precision, recall in curve["points"]:
        y_pred = (np.nan_to_num(scores[:, 0], nan=-1) >= threshold).astype(int)
        assert precision == pytest.approx(precision_score(y_true, y_pred))
        if y_true.any():
            assert recall == pytest.approx(recall_score(y_true, y_pred))
        else:
            assert recall is None


def test_the_threshold_maximises_f1_the_highest_on_a_tie():
    score = np.array([0.9, 0.8, 0.4, 0.2, np.nan])
    truth = np.array([True, False, True, False, True])
    t, f1 = best_threshold(score, truth)
    best = max(f1_score(truth, np.nan_to_num(score, nan=-1) >= x) for x in (0.9, 0.8, 0.4, 0.2))
    assert f1 == pytest.approx(best) and t == 0.4
    assert best_threshold(np.array([0.5, 0.5]), np.array([True, False]))[0] == 0.5
    assert best_threshold(np.array([0.5]), np.array([False])) == (None, None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_the_dev_split_is_seeded_and_keeps_conversations_whole(conversation, seed):
    conversation = np.array(conversation)
    dev = dev_split(conversation, 0.3, seed)
    assert (dev == dev_split(conversation, 0.3, seed)).all()
    for c in np.unique(conversation):
        assert len(set(dev[conversation == c].tolist())) == 1
    k = len(np.unique(conversation))
    n_dev = len(np.unique(conversation[dev]))
    assert n_dev >= 1 and (k < 2 or n_dev <= k - 1)


def test_dev_share_out_of_range_is_refused():
    with pytest.raises(ValueError, match="dev_share"):
        dev_split(np.array([1, 2]), 1.5, 0)


def test_dev_test_scores_the_test_conversations_with_the_dev_threshold():
    rng = np.random.default_rng(4)
    n = 200
    conversation = rng.integers(0, 40, n)
    truth = rng.random((n, 3)) < 0.3
    scores = np.clip(truth * 0.5 + rng.random((n, 3)) * 0.6, 0, 1).round(2)
    out = dev_test(
        CODES, np.arange(n), conversation, scores, truth, dev_share=0.3, seed=7, n_boot=50
    )
    dev = dev_split(conversation, 0.3, 7)
    assert out["n_dev_conversations"] == 12 and out["n_test_cards"] == int((~dev).sum())
    for i, code in enumerate(CODES):
        assert out["threshold"][code] == best_threshold(scores[dev, i], truth[dev, i])[0]
        y_pred = scores[~dev, i] >= out["threshold"][code]
        assert out["test"]["f1"][code] == pytest.approx(f1_score(truth[~dev, i], y_pred))
        assert out["test"]["f1_ci"][code] is not None
    again = dev_test(
        CODES, np.arange(n), conversation, scores, truth, dev_share=0.3, seed=7, n_boot=50
    )
    assert again == out
