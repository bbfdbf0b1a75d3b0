"""Machine judges' scores against a gold (issue 22 point 5; AGREEMENT.md, "judge measures"):
pure numpy, no database.

    versus_arrays(codes, card, who, names, mask, conversation, gold, *, n_boot, seed)
        -> {name: report}   each name's label sets against the gold (versus.py's report)
    versus_sets(given, gold, conversation, codes, *, n_boot, seed) -> the same, from dicts
    model_vs_model(codes, a, b, conversation, *, n_boot, seed) -> report
    pr_curves(codes, scores, truth) -> {code: curve}
    dev_split(conversation, dev_share, seed) -> bool per card (the development cards)
    dev_test(codes, conversation, scores, truth, *, dev_share, seed, n_boot) -> report

Scores against a gold are versus.py's measures, every one with its 95% percentile bootstrap
interval resampling conversations exactly as versus.py defines it (the same code): per type
precision, recall, F1, Cohen's kappa (binary) and support; exact set match (`accuracy`),
Cohen's kappa of the sets, macro and micro F1.

Model against model: two judges on the cards both labelled, the first in the reference's
place (Cohen's kappa and exact match are symmetric): per type kappa and the exact match,
with intervals.

A scored judge gives per card and type a score (NaN: it gave none, never a label). Its
precision-recall curve per type: at each distinct score t, labelling the cards scored >= t,
the precision and recall against the truth (scikit-learn's precision_score and
recall_score at that threshold). The development split: the distinct conversations in
ascending id order, permuted by `numpy.random.default_rng(seed).permutation`; the first
round(dev_share x K) of them (at least one, and at least one left when K >= 2) are the
development conversations. On their cards each type's threshold is the score that maximises
F1 (ties: the highest such score, the fewest labels); the labels that thresholds give on
the other (test) cards are scored against the truth with intervals, as above.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from .stats import DEFAULT_N_BOOT, Reference, encode_axes
from .versus import versus_encoded

AXIS = "_"
NO_SCORE = "undefined: the judge scored no card of the type"
NO_POSITIVE = "undefined: no development card has the type"
NO_DEV = "undefined: no conversation to split"


def masks_of(sets: Iterable[Iterable[str]], codes: Sequence[str]) -> np.ndarray:
    """The uint64 label mask of each set, in the bit order of `codes`; ValueError naming an
    unknown code."""
    bit = {c: i for i, c in enumerate(codes)}
    out = []
    for k, labels in enumerate(sets):
        m = 0
        for code in labels:
            if code not in bit:
                raise ValueError(f"set {k}: unknown type code {code!r}")
            m |= 1 << bit[code]
        out.append(m)
    return np.array(out, dtype=np.uint64)


def versus_arrays(
    codes: Sequence[str],
    card: np.ndarray,
    who: np.ndarray,
    names: Sequence[str],
    mask: np.ndarray,
    conversation: np.ndarray,
    gold: Reference,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, dict]:
    """Each of `names` against `gold` on the cards with both: records as arrays (`card` ids,
    `who` indexes `names`, `mask` the label masks, `conversation` the card's conversation
    id, all parallel)."""
    card = np.asarray(card, dtype=np.int64)
    if not len(card):
        return {}
    enc = encode_axes(
        {AXIS: list(codes)},
        card,
        np.asarray(who, dtype=np.int64),
        list(names),
        np.zeros(len(card), dtype=np.int64),
        [""],
        {AXIS: np.asarray(mask, dtype=np.uint64)},
    )[AXIS]
    conv_of = dict(zip(card.tolist(), np.asarray(conversation).tolist(), strict=True))
    per_card = np.array([conv_of[c] for c in enc.cards.tolist()], dtype=np.int64)
    return versus_encoded(enc, gold, per_card, n_boot=n_boot, seed=seed)


def versus_sets(
    given: Mapping[str, Mapping[Hashable, Iterable[str]]],
    gold: Mapping[Hashable, Iterable[str]],
    conversation: Mapping[Hashable, int],
    codes: Sequence[str],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, dict]:
    """`versus_arrays` of {name: {card: set}}, gold {card: set}, {card: conversation}."""
    names = sorted(given)
    card, who, sets = [], [], []
    for k, name in enumerate(names):
        for c, labels in given[name].items():
            card.append(c)
            who.append(k)
            sets.append(labels)
    reference = Reference.of(gold, codes)
    return versus_arrays(
        codes,
        np.array(card, dtype=np.int64),
        np.array(who, dtype=np.int64),
        names,
        masks_of(sets, codes),
        np.array([conversation[c] for c in card], dtype=np.int64),
        reference,
        n_boot=n_boot,
        seed=seed,
    )


MODEL_KEYS = ("n_cards", "n_conversations", "accuracy", "cohen_kappa", "per_label_kappa")


def model_vs_model(
    codes: Sequence[str],
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    conversation: Mapping[int, int],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict:
    """Two judges' label sets (`a`, `b`: (card ids, masks)) on the cards both labelled:
    per type kappa and the exact match, Cohen's kappa of the sets, with intervals."""
    a_card, a_mask = (np.asarray(x) for x in a)
    b_card, b_mask = (np.asarray(x) for x in b)
    common = np.intersect1d(a_card, b_card)
    keep = np.isin(b_card, common)
    reference = Reference(
        card=a_card[np.isin(a_card, common)], mask=a_mask[np.isin(a_card, common)]
    )
    card = b_card[keep]
    report = versus_arrays(
        codes,
        card,
        np.zeros(len(card), dtype=np.int64),
        ["b"],
        b_mask[keep],
        np.array([conversation[int(c)] for c in card], dtype=np.int64),
        reference,
        n_boot=n_boot,
        seed=seed,
    ).get("b")
    if report is None:
        return {"n_cards": 0}
    return {
        k: v
        for k, v in report.items()
        if k.removesuffix("_reason").removesuffix("_ci") in MODEL_KEYS
    }


# -- scored judges: precision-recall curves, a threshold from a development split ------------


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)


def _sweep(score: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, ...]:
    """(thresholds descending, tp, fp) labelling the cards scored >= each threshold; a card
    without a score (NaN) is never labelled."""
    scored = ~np.isnan(score)
    s, t = score[scored], truth[scored]
    thresholds, inverse = np.unique(-s, return_inverse=True)  # descending scores
    tp = np.cumsum(np.bincount(inverse, weights=t, minlength=len(thresholds)))
    n = np.cumsum(np.bincount(inverse, minlength=len(thresholds)))
    return -thresholds, tp, n - tp


def pr_curves(codes: Sequence[str], scores: np.ndarray, truth: np.ndarray) -> dict[str, dict]:
    """Per type: {"points": [[threshold, precision, recall], ...] from the highest threshold
    down, "n_cards", "n_positive"}; recall is null where the truth has no card of the type.
    `scores`: cards x types (NaN: none given), `truth`: cards x types, bool."""
    out = {}
    for i, code in enumerate(codes):
        thresholds, tp, fp = _sweep(scores[:, i], truth[:, i].astype(bool))
        positive = int(truth[:, i].sum())
        points = []
        for t, a, b in zip(thresholds.tolist(), tp.tolist(), fp.tolist(), strict=True):
            recall = a / positive if positive else None
            points.append([t, a / (a + b), recall])
        curve: dict = {"points": points, "n_cards": len(scores), "n_positive": positive}
        if not points:
            curve["reason"] = NO_SCORE
        out[code] = curve
    return out


def best_threshold(score: np.ndarray, truth: np.ndarray) -> tuple[float | None, float | None]:
    """(the score maximising F1 labelling the cards scored >= it, that F1); the highest such
    score on a tie; (None, None) without a scored card or a positive one."""
    truth = truth.astype(bool)
    thresholds, tp, fp = _sweep(score, truth)
    if not len(thresholds) or not truth.any():
        return None, None
    f1 = _f1(tp, fp, truth.sum() - tp)
    best = int(np.nanargmax(f1))  # the first maximum: thresholds descend
    return float(thresholds[best]), float(f1[best])


def dev_split(conversation: np.ndarray, dev_share: float, seed: int) -> np.ndarray:
    """Per card, whether its conversation is a development one (module docstring)."""
    if not 0 < dev_share < 1:
        raise ValueError(f"dev_share: {dev_share!r} is not between 0 and 1 (exclusive)")
    distinct = np.unique(conversation)
    k = len(distinct)
    if not k:
        return np.zeros(0, dtype=bool)
    n_dev = min(max(round(dev_share * k), 1), k - 1 if k >= 2 else 1)
    order = np.random.default_rng(seed).permutation(k)
    return np.isin(conversation, distinct[order[:n_dev]])


def dev_test(
    codes: Sequence[str],
    card: np.ndarray,
    conversation: np.ndarray,
    scores: np.ndarray,
    truth: np.ndarray,
    *,
    dev_share: float,
    seed: int,
    n_boot: int = DEFAULT_N_BOOT,
) -> dict:
    """Thresholds chosen on the development conversations, the labels they give scored on
    the others (module docstring). Rows of `scores` and `truth` (cards x types) are the
    cards `card` in conversations `conversation`."""
    dev = dev_split(conversation, dev_share, seed)
    out: dict = {
        "dev_share": dev_share,
        "seed": seed,
        "n_dev_cards": int(dev.sum()),
        "n_test_cards": int((~dev).sum()),
        "n_dev_conversations": len(np.unique(conversation[dev])),
        "n_test_conversations": len(np.unique(conversation[~dev])),
        "threshold": {},
        "dev_f1": {},
    }
    given = np.zeros(int((~dev).sum()), dtype=np.uint64)
    for i, code in enumerate(codes):
        t, f1 = best_threshold(scores[dev, i], truth[dev, i])
        out["threshold"][code], out["dev_f1"][code] = t, f1
        if t is None:
            reason = NO_SCORE if np.isnan(scores[dev, i]).all() else NO_POSITIVE
            out.setdefault("threshold_reason", {})[code] = reason
            continue
        with np.errstate(invalid="ignore"):
            on = np.nan_to_num(scores[~dev, i], nan=-np.inf) >= t
        given |= on.astype(np.uint64) << np.uint64(i)
    test_card = np.asarray(card)[~dev]
    gold = Reference(card=test_card, mask=_masks_of_bool(truth[~dev]))
    report = versus_arrays(
        codes,
        test_card,
        np.zeros(len(test_card), dtype=np.int64),
        ["test"],
        given,
        conversation[~dev],
        gold,
        n_boot=n_boot,
        seed=seed,
    )
    out["test"] = report.get("test", {"n_cards": 0})
    return out


def _masks_of_bool(truth: np.ndarray) -> np.ndarray:
    if not truth.size:
        return np.zeros(len(truth), dtype=np.uint64)
    weights = np.uint64(1) << np.arange(truth.shape[1], dtype=np.uint64)
    return (truth.astype(np.uint64) * weights).sum(axis=1).astype(np.uint64)
