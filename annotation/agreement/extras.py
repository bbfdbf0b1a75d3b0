"""What the report page draws beyond the agreement statistics: label co-occurrence, the
annotator-vs-annotator confusion of every pair, and the counts of the taxonomy table.

    build_extras(records, codes, consensus) -> dict (JSON-able)
    extras_from_encoded(enc, consensus) -> the same from encoded records (stats.encode_axes)

`records`, `codes` and `consensus` are what `stats.agreement_report` takes (the consensus
may also be a stats.Reference). The result:

- `cooccurrence`: {"source": "consensus" | "records", "n_sets", "codes", "matrix"}:
  matrix[i][j] = label sets carrying both codes[i] and codes[j] (the diagonal: sets carrying
  codes[i]). The sets are the consensus labels, or every record when there is no consensus.
- `confusion`: {"a|b": {...}} for every pair of annotators with records in a common group
  (keyed as `agreement`'s pairs: by ids, with `a` and `b` naming them, in a study's report),
  over their common cards (cards with a record from
  both): `n_common_cards`; `codes`; `labels`: matrix[i][j] = common cards where a gave
  codes[i] and b gave codes[j]; `a_empty[j]` / `b_empty[i]`: cards where a (b) gave no label
  and the other gave codes[j] (codes[i]); `both_empty`; `per_label[code]` =
  [[both absent, only b], [only a, both]].
- `pairs_by_group`: {group: ["a|b", ...]}, the pairs averaged into each group's kappa.
- `taxonomy_table`: {"n_cards": consensus cards, "n_instances": consensus label instances,
  "rows": [{"code", "count", "share", "share_of_cards"}], "no_smell": {...}}; rows in `codes`
  order; `count` = consensus cards carrying the code, `share_of_cards` = count / n_cards
  (= the report's `prevalence`), `share` = count / n_instances (the study's paper's "share
  of annotated smell instances"). `no_smell`: the consensus cards with the empty set:
  `count`, `share_of_cards`, and `share` null with a `share_reason` (the empty set is no
  label instance). A share with a zero denominator is null with a sibling `share_reason` /
  `share_of_cards_reason` (as in the agreement report). Category and display name come
  from the taxonomy in the database: the page adds them.

Everything is counted over the distinct label sets (a few hundred at most), never per card
in Python, so a million cards cost a few factorize/bincount passes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .stats import (
    CardSets,
    Encoded,
    _as_reference,
    _bits,
    _pairs_by_group,
    _rows_by_annotator,
    encode,
    pair_key,
    pair_names,
)

_NO_CONSENSUS = "undefined: no consensus labels"
_NO_INSTANCES = "undefined: the consensus labels carry no label"
_NOT_AN_INSTANCE = "not applicable: the empty set (no smell) is no label instance"


def build_extras(
    records: pd.DataFrame,
    codes: Sequence[str],
    consensus: Mapping[Hashable, Iterable[str]] | None = None,
) -> dict:
    return extras_from_encoded(encode(records, codes), consensus)


def extras_from_encoded(enc: Encoded, consensus: CardSets | None = None) -> dict:
    codes = enc.codes
    reference = _as_reference(consensus, codes)
    consensus_masks = None if reference is None else reference.mask
    cooc_masks = consensus_masks if consensus_masks is not None else enc.mask
    pairs, by_group = _pairs_by_group(enc)
    rows = _rows_by_annotator(enc.annotator, len(enc.annotators))
    confusion = {
        pair_key(enc, a, b): {**pair_names(enc, a, b), **_pair_confusion(enc, rows[a], rows[b])}
        for a, b in pairs
    }
    return {
        "cooccurrence": {
            "source": "consensus" if consensus_masks is not None else "records",
            "n_sets": len(cooc_masks),
            "codes": codes,
            "matrix": _cooccurrence(cooc_masks, len(codes)).tolist(),
        },
        "confusion": confusion,
        "pairs_by_group": {
            name: [pair_key(enc, a, b) for a, b in members] for name, members in by_group.items()
        },
        "taxonomy_table": _taxonomy_counts(consensus_masks, codes),
    }


def _distinct(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of each mask into the distinct masks, distinct masks, how often each occurs)."""
    idx, uniques = pd.factorize(masks)
    uniques = np.asarray(uniques, dtype=np.uint64)
    return idx, uniques, np.bincount(idx, minlength=len(uniques))


def _cooccurrence(masks: np.ndarray, n_codes: int) -> np.ndarray:
    if len(masks) == 0:
        return np.zeros((n_codes, n_codes), dtype=np.int64)
    _, uniques, counts = _distinct(masks)
    bits = _bits(uniques, n_codes)
    return bits.T @ (bits * counts[:, None])


def _pair_confusion(enc, rows_a: np.ndarray, rows_b: np.ndarray) -> dict:
    """`rows_a`, `rows_b`: the two annotators' records, each sorted by card (one per card)."""
    codes, n_codes = enc.codes, len(enc.codes)
    _, ia, ib = np.intersect1d(
        enc.card[rows_a], enc.card[rows_b], assume_unique=True, return_indices=True
    )
    mask_a, mask_b = enc.mask[rows_a[ia]], enc.mask[rows_b[ib]]
    n = len(mask_a)
    if n == 0:
        table = np.zeros((1, 1), dtype=np.int64)
        ua = ub = np.zeros(1, dtype=np.uint64)
    else:
        xa, ua, _ = _distinct(mask_a)
        xb, ub, _ = _distinct(mask_b)
        table = np.bincount(xa * len(ub) + xb, minlength=len(ua) * len(ub)).reshape(
            len(ua), len(ub)
        )
    bits_a, bits_b = _bits(ua, n_codes), _bits(ub, n_codes)
    labels = bits_a.T @ table @ bits_b
    per_a = bits_a.T @ table.sum(axis=1)
    per_b = bits_b.T @ table.sum(axis=0)
    both = np.diag(labels)
    empty_a, empty_b = ua == 0, ub == 0
    return {
        "n_common_cards": int(n),
        "codes": codes,
        "labels": labels.tolist(),
        "a_empty": (table[empty_a].sum(axis=0) @ bits_b).tolist(),
        "b_empty": (bits_a.T @ table[:, empty_b].sum(axis=1)).tolist(),
        "both_empty": int(table[np.ix_(empty_a, empty_b)].sum()),
        "per_label": {
            code: [
                [int(n - per_a[i] - per_b[i] + both[i]), int(per_b[i] - both[i])],
                [int(per_a[i] - both[i]), int(both[i])],
            ]
            for i, code in enumerate(codes)
        },
    }


def _taxonomy_counts(consensus_masks: np.ndarray | None, codes: list[str]) -> dict:
    n_cards = 0 if consensus_masks is None else len(consensus_masks)
    if n_cards:
        counts = _cooccurrence(consensus_masks, len(codes)).diagonal()
        n_empty = int(np.count_nonzero(consensus_masks == 0))
    else:
        counts = np.zeros(len(codes), dtype=np.int64)
        n_empty = 0
    n_instances = int(counts.sum())
    rows = []
    for code, count in zip(codes, counts.tolist(), strict=True):
        row: dict = {"code": code, "count": int(count)}
        _share(row, "share", count, n_instances, _NO_CONSENSUS if not n_cards else _NO_INSTANCES)
        _share(row, "share_of_cards", count, n_cards, _NO_CONSENSUS)
        rows.append(row)
    no_smell: dict = {"count": n_empty, "share": None, "share_reason": _NOT_AN_INSTANCE}
    _share(no_smell, "share_of_cards", n_empty, n_cards, _NO_CONSENSUS)
    return {"n_cards": n_cards, "n_instances": n_instances, "rows": rows, "no_smell": no_smell}


def _share(row: dict, key: str, count: int, total: int, reason: str) -> None:
    row[key] = count / total if total else None
    if not total:
        row[f"{key}_reason"] = reason
