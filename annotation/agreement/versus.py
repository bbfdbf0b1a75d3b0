"""Each annotator against a reference (the consensus; an LLM judge is one such annotator),
the reference being the truth (AGREEMENT.md, "judge measures").

    versus_reference(records, reference, codes, *, n_boot=1000, seed=0) -> {annotator: report}
    versus_encoded(enc, reference, conversation=None, *, n_boot=1000, seed=0) -> the same

Per annotator, on the cards with both a record and a reference: `n_cards`,
`n_conversations` (the conversations those cards are in), `accuracy` (identical sets),
`cohen_kappa` (set as category), `macro_f1` (the mean of the defined per-label F1s, and
`macro_f1_n_defined`: scikit-learn's f1_score(average="macro", zero_division=nan)),
`micro_f1` (F1 of the types' pooled counts: f1_score(average="micro")), and per label
`precision`, `recall`, `f1`, `per_label_kappa` and `support` (the reference's cards with the
label; a count, without interval). The point estimates equal
scikit-learn's (tests/agreement/test_versus_reference.py, test_versus_intervals.py).

Intervals: each measure has `<key>_ci`, a 95% percentile bootstrap interval resampling
conversations, all cards of a drawn conversation together (a conversation's cards are not
independent: one misunderstanding runs through them). Defined as tests write it out:
the annotator's cards with a reference are grouped by conversation, the K conversations in
ascending id order; `rng = numpy.random.default_rng(seed)`, fresh for each annotator (so
annotators with as many conversations draw the same resamples, drawn once); each
of the `n_boot` resamples is one `rng.integers(0, K, size=K)`, the drawn conversations with
every card of theirs (a conversation drawn twice counts twice); the measure is computed on
the resample as on the data; the interval is numpy's (linear) 2.5th and 97.5th percentile
of the resamples where the measure is defined (a resample without any card of a label
leaves that label's precision undefined, for instance). Per-label intervals are dicts
{label: [low, high] or null}. A null interval has a `<key>_ci_reason` (a dict per label):
the measure itself undefined, undefined on every resample, `n_boot=0`, or no conversation
known (records without a `conversation` column).

The records of `versus_reference` may carry a `conversation` column (any hashable id, one
per card); `versus_encoded` takes the conversation of each card as an array parallel to
`enc.cards`. The resamples are computed as counts, never as copies of cards: a resample is
the number of times each conversation was drawn, a conversation the counts of its distinct
(truth, given) cells (a sparse matrix), so each block of resamples is one sparse product
and a few small dense ones (at a million cards in 100,000 conversations, 1,000 resamples
take seconds).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from .stats import (
    _BOOT_BLOCK,
    _BOOT_OFF,
    _KAPPA_CONSTANT,
    DEFAULT_N_BOOT,
    CardSets,
    Encoded,
    Reference,
    _binary_kappa,
    _binary_reason,
    _bits,
    _categories,
    _cells,
    _label_tables,
    _put,
    _put_labels,
    _resampled_kappas,
    _row_label,
    _rows_by_annotator,
    _set_kappa,
    encode,
)

CONFIDENCE = 0.95
NO_CARD = "undefined: no card has both a record and a reference"
NO_F1 = "undefined: no type has a defined F1"
NO_LABEL = "undefined: neither the annotator nor the reference gave any label"
NO_CONVERSATION = (
    "not applicable: the records name no conversation (a 'conversation' column) to resample"
)
CI_POINT_UNDEFINED = "undefined: the measure itself is undefined"
CI_ALL_UNDEFINED = "undefined: the measure is undefined on every resample"
MEASURES = ("accuracy", "cohen_kappa", "macro_f1", "micro_f1")
PER_LABEL = ("precision", "recall", "f1", "per_label_kappa")


def versus_reference(
    records: pd.DataFrame,
    reference: Mapping[Hashable, Iterable[str]],
    codes: Sequence[str],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, dict]:
    """Each annotator of `records` against `reference` (card -> label codes), on the cards
    with both (module docstring). `group` is optional; `conversation` gives the intervals."""
    if "group" not in records.columns:
        records = records.assign(group="")
    enc = encode(records, codes)
    conversation = _conversation_of_cards(records, enc) if "conversation" in records else None
    return versus_encoded(
        enc, Reference.of(reference, codes), conversation, n_boot=n_boot, seed=seed
    )


def _conversation_of_cards(records: pd.DataFrame, enc: Encoded) -> np.ndarray:
    """The conversation of each card of `enc` (in the order of `enc.cards`) as an integer
    rank of the ids in ascending order; ValueError naming the row of a missing one, or of
    a card said to be in two conversations."""
    ids, uniques = pd.factorize(records["conversation"], sort=True, use_na_sentinel=True)
    if (ids < 0).any():
        at = _row_label(records, int(np.flatnonzero(ids < 0)[0]))
        raise ValueError(f"{at}: field 'conversation' is missing")
    card = enc.cards.get_indexer(records["card"])
    first = np.full(len(enc.cards), -1, dtype=np.int64)
    first[card[::-1]] = ids[::-1]  # the first row of each card wins
    differ = np.flatnonzero(first[card] != ids)
    if len(differ):
        row = int(differ[0])
        earlier = int(np.flatnonzero(card == card[row])[0])
        raise ValueError(
            f"{_row_label(records, row)}: field 'conversation' is {uniques[ids[row]]!r}, but "
            f"card {records['card'].iloc[row]!r} is in conversation {uniques[first[card[row]]]!r} "
            f"({_row_label(records, earlier)})"
        )
    return first


def versus_encoded(
    enc: Encoded,
    reference: CardSets,
    conversation: np.ndarray | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, dict]:
    """`versus_reference` of already encoded records; `conversation`: the conversation id
    (an integer) of each card, parallel to `enc.cards`, or None (no intervals)."""
    if not isinstance(reference, Reference):
        reference = Reference.of(reference, enc.codes)
    ref_index = pd.Index(reference.card)
    ref_of_card = (
        ref_index.get_indexer(enc.cards) if len(ref_index) else np.full(len(enc.cards), -1)
    )
    out: dict[str, dict] = {}
    resampled: dict[str, _Resampled] = {}
    for a, rows in enumerate(_rows_by_annotator(enc.annotator, len(enc.annotators))):
        ref_row = ref_of_card[enc.card[rows]]
        keep = ref_row >= 0
        truth, given = reference.mask[ref_row[keep]], enc.mask[rows[keep]]
        who = enc.annotators[a]
        if conversation is None:
            out[who] = _versus(truth, given, enc.codes)
            continue
        convs = np.asarray(conversation)[enc.card[rows[keep]]]
        out[who] = _versus(truth, given, enc.codes, len(np.unique(convs)))
        if n_boot > 0 and len(truth):
            resampled[who] = _Resampled(truth, given, convs, len(enc.codes))
    values = _bootstrap(list(resampled.values()), n_boot, seed)
    for who, report in out.items():
        if conversation is None:
            cis = _no_intervals(report, enc.codes, NO_CONVERSATION)
        elif n_boot <= 0:
            cis = _no_intervals(report, enc.codes, _BOOT_OFF)
        elif who not in resampled:  # no card: every measure undefined
            cis = _no_intervals(report, enc.codes, CI_POINT_UNDEFINED)
        else:
            cis = _intervals(report, enc.codes, values[id(resampled[who])])
        out[who] = _with_intervals(report, cis)
    return out


def _versus(
    truth: np.ndarray, given: np.ndarray, codes: Sequence[str], n_conversations: int | None = None
) -> dict:
    """The point estimates (and how many conversations the cards are in, when known)."""
    n_codes = len(codes)
    cat, cat_mask = _categories(np.concatenate([truth, given]).astype(np.uint64))
    c = _cells(cat[: len(truth)], cat[len(truth) :], cat_mask)
    kappa, n, agree = _set_kappa(c)
    r: dict = {"n_cards": n}
    if n_conversations is not None:
        r["n_conversations"] = n_conversations
    _put(r, "accuracy", agree / n if n else None, NO_CARD)
    _put(r, "cohen_kappa", kappa, NO_CARD if n == 0 else _KAPPA_CONSTANT)
    in_truth, in_given, both_l = (t.tolist() for t in _label_tables(c, n_codes))
    precision, recall, f1, kappas = [], [], [], []
    for i in range(n_codes):
        tp, fp, fn = both_l[i], in_given[i] - both_l[i], in_truth[i] - both_l[i]
        precision.append(
            (tp / (tp + fp), None)
            if tp + fp
            else (None, "undefined: the annotator never gave the label")
        )
        recall.append(
            (tp / (tp + fn), None)
            if tp + fn
            else (None, "undefined: the reference never has the label")
        )
        f1.append(
            (2 * tp / (2 * tp + fp + fn), None)
            if tp + fp + fn
            else (None, "undefined: neither the annotator nor the reference gave the label")
        )
        kappa_l = _binary_kappa(n, in_truth[i], in_given[i], both_l[i])
        kappas.append(
            (kappa_l, None if kappa_l is not None else _binary_reason(n, in_truth[i], in_given[i]))
        )
    defined = [v for v, _ in f1 if v is not None]
    macro = sum(defined) / len(defined) if defined else None
    _put(r, "macro_f1", macro, NO_CARD if n == 0 else NO_F1)
    r["macro_f1_n_defined"] = len(defined)
    pooled = sum(in_truth) + sum(in_given)
    _put(
        r, "micro_f1", 2 * sum(both_l) / pooled if pooled else None, NO_CARD if n == 0 else NO_LABEL
    )
    _put_labels(r, "precision", codes, precision)
    _put_labels(r, "recall", codes, recall)
    _put_labels(r, "f1", codes, f1)
    _put_labels(r, "per_label_kappa", codes, kappas)
    r["support"] = {c: int(k) for c, k in zip(codes, in_truth, strict=True)}
    return r


# -- the bootstrap --------------------------------------------------------------------------


class _Resampled:
    """One annotator's cards with a reference, ready to be resampled: the conversations
    (ranked in ascending id order) x the distinct (truth, given) cells, as a sparse count
    matrix, and what each cell adds to every measure."""

    def __init__(
        self, truth: np.ndarray, given: np.ndarray, conversation: np.ndarray, n_codes: int
    ) -> None:
        conv, conversations = _ranks(conversation)
        self.n_conv = len(conversations)
        cat, cat_mask = _categories(np.concatenate([truth, given]).astype(np.uint64))
        n_cat = len(cat_mask)
        cell, cells = _ranks(cat[: len(truth)] * n_cat + cat[len(truth) :])
        self.n_cells = len(cells)
        self.x, self.y = cells // n_cat, cells % n_cat
        # cells x conversations: how many cards of each cell a conversation has
        self.per_conversation = sparse.csr_matrix(
            (np.ones(len(cell)), (cell, conv)), shape=(len(cells), self.n_conv)
        )
        self.agree = (self.x == self.y).astype(np.float64)
        self.in_truth = _bits(cat_mask[self.x], n_codes).astype(np.float64)
        self.in_given = _bits(cat_mask[self.y], n_codes).astype(np.float64)
        self.in_both = self.in_truth * self.in_given
        self.n_codes = n_codes
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in (*MEASURES, *PER_LABEL)}

    def add(self, times: np.ndarray) -> None:
        """The measures on a block of resamples, `times` (conversations x resamples) the
        number of times each resample drew each conversation; NaN where undefined."""
        w = np.asarray(self.per_conversation @ times).T  # resamples x cells: their cards
        n = w.sum(axis=1)
        tp, a1, b1 = w @ self.in_both, w @ self.in_truth, w @ self.in_given
        parts = self.parts
        with np.errstate(divide="ignore", invalid="ignore"):
            parts["accuracy"].append((w @ self.agree) / n)
            parts["cohen_kappa"].append(_resampled_kappas(w, self.x, self.y))
            parts["precision"].append(np.where(b1 > 0, tp / b1, np.nan))
            parts["recall"].append(np.where(a1 > 0, tp / a1, np.nan))
            f1 = np.where(a1 + b1 > 0, 2 * tp / (a1 + b1), np.nan)
            parts["f1"].append(f1)
            defined = ~np.isnan(f1)
            parts["macro_f1"].append(np.where(defined, f1, 0.0).sum(axis=1) / defined.sum(axis=1))
            pooled = a1.sum(axis=1) + b1.sum(axis=1)
            parts["micro_f1"].append(np.where(pooled > 0, 2 * tp.sum(axis=1) / pooled, np.nan))
            # Cohen's kappa per label from its 2x2 table, as stats._binary_kappa
            nn = n[:, None]
            agree_l = nn - a1 - b1 + 2 * tp
            denominator = nn * nn - (a1 * b1 + (nn - a1) * (nn - b1))
            kappa_l = 1.0 - nn * (nn - agree_l) / denominator
            parts["per_label_kappa"].append(np.where(denominator != 0, kappa_l, np.nan))

    def values(self) -> dict[str, np.ndarray]:
        return {k: np.concatenate(v) for k, v in self.parts.items()}


def _bootstrap(annotators: list[_Resampled], n_boot: int, seed: int) -> dict[int, dict]:
    """{id(annotator): every measure on each of the `n_boot` resamples} (the module's
    definition: {measure: (n_boot,)}, {per-label measure: (n_boot, n_codes)}). The draws
    depend on the number of conversations only, so annotators with as many (a judge and
    the students on the same cards) share them: drawn once, in blocks of resamples."""
    by_size: dict[int, list[_Resampled]] = {}
    for annotator in annotators:
        by_size.setdefault(annotator.n_conv, []).append(annotator)
    for n_conv, members in by_size.items():
        rng = np.random.default_rng(seed)
        widest = max(max(m.n_cells for m in members), n_conv, members[0].n_codes, 1)
        block = max(1, _BOOT_BLOCK // widest)
        for start in range(0, n_boot, block):
            size = min(block, n_boot - start)
            drawn = np.empty((size, n_conv))
            for b in range(size):
                drawn[b] = np.bincount(rng.integers(0, n_conv, size=n_conv), minlength=n_conv)
            times = np.ascontiguousarray(drawn.T)  # conversations x resamples
            for annotator in members:
                annotator.add(times)
    return {id(a): a.values() for a in annotators}


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each value into the distinct values, the distinct values ascending)."""
    distinct, index = np.unique(values, return_inverse=True)
    return index.reshape(-1).astype(np.int64), distinct


def _percentiles(point, values: np.ndarray) -> tuple[list[float] | None, str | None]:
    if point is None:
        return None, CI_POINT_UNDEFINED
    defined = values[~np.isnan(values)]
    if not len(defined):
        return None, CI_ALL_UNDEFINED
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return [float(low), float(high)], None


def _intervals(report: dict, codes: Sequence[str], values: dict[str, np.ndarray]) -> dict:
    """{measure: {"<measure>_ci": ..., "<measure>_ci_reason": ...}} of one annotator."""
    out = {}
    for key in MEASURES:
        interval, reason = _percentiles(report[key], values[key])
        out[key] = {f"{key}_ci": interval, **({f"{key}_ci_reason": reason} if reason else {})}
    for key in PER_LABEL:
        per_label = [
            _percentiles(report[key][code], values[key][:, i]) for i, code in enumerate(codes)
        ]
        out[key] = _label_intervals(key, codes, per_label)
    return out


def _no_intervals(report: dict, codes: Sequence[str], reason: str) -> dict:
    """Every interval null: `reason`, or that the measure itself is undefined."""
    out = {}
    for key in MEASURES:
        why = CI_POINT_UNDEFINED if report[key] is None else reason
        out[key] = {f"{key}_ci": None, f"{key}_ci_reason": why}
    for key in PER_LABEL:
        per_label = [
            (None, CI_POINT_UNDEFINED if report[key][code] is None else reason) for code in codes
        ]
        out[key] = _label_intervals(key, codes, per_label)
    return out


def _label_intervals(key: str, codes: Sequence[str], per_label: list) -> dict:
    out: dict = {
        f"{key}_ci": {c: interval for c, (interval, _) in zip(codes, per_label, strict=True)}
    }
    reasons = {c: r for c, (interval, r) in zip(codes, per_label, strict=True) if interval is None}
    if reasons:
        out[f"{key}_ci_reason"] = reasons
    return out


def _with_intervals(report: dict, intervals: dict) -> dict:
    """The report with each measure's interval right after it (after its `_reason`)."""
    out: dict = {}
    for key, value in report.items():
        out[key] = value
        measure = key.removesuffix("_reason")
        last = key.endswith("_reason") or f"{key}_reason" not in report
        if measure in intervals and last:
            out.update(intervals[measure])
    return out
