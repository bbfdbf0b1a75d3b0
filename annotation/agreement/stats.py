"""Agreement statistics of one axis (AGREEMENT.md), vectorised with numpy and pandas.

    agreement_report(records, codes, consensus=None, *, n_boot=1000, seed=0) -> dict
    agreement_reports({axis: (records, codes[, consensus])}, ...) -> {axis: report}
    versus.versus_reference(records, reference, codes) -> {annotator: report}

`records` is a DataFrame with the columns `card` (hashable id), `annotator` (str), `group`
(str) and `labels` (a frozenset, set, list or tuple of label codes of the axis; empty = "no
smell", an observation). `codes` lists every label code of the axis, so a label nobody used
still gets its per-label entries. `consensus` maps card -> label codes (for `prevalence`).

`versus_reference` (versus.py) gives per annotator: `n_cards` (cards with a record and a
reference), `accuracy` (identical sets), `cohen_kappa` (set as category), and per label
`precision`, `recall`, `f1` and `per_label_kappa`, the reference being the truth, each
with a bootstrap interval resampling conversations.

A bad record (unknown label code, missing field, two records of one annotator on one card)
raises ValueError naming its row (the DataFrame index) and field.

Numbers equal scikit-learn, statsmodels, `krippendorff` and nltk on the same data (the tests
check it to 1e-9); those libraries are never imported here.

Undefined values
----------------
A value that is undefined (0/0: a constant rater, a label nobody used, no common card, too
few annotators...) is `null`, and a sibling key `<key>_reason` holds a sentence starting with
"undefined:" (the formula divides by zero) or "not applicable:" (the statistic is not computed
for this data, e.g. Fleiss with fewer than 3 annotators). For a per-label dict the sibling
`<key>_reason` is a dict {label: reason} holding only the null labels. A `_reason` key is
present only next to a null, so a report on well-behaved data has exactly the keys of
AGREEMENT.md plus the extras below. There is never a NaN or an infinity in a report, so
`json.dumps(report, allow_nan=False)` always works.

Definitions the contract leaves open, decided here
--------------------------------------------------
- Pairs: annotators `a` and `b` form the pair "a|b" (names sorted) when they have records in
  a common group. The pair's common cards are all cards with a record from both. Records
  encoded with ids (encode_axes(ids=...): a study's report, data.py) key the pair by the
  two ids instead, "12|7" (in the order of the names), and its entry names both:
  `"a": {"id": 12, "name": "alice"}, "b": {...}`, so that no name (one with a "|") can
  break a statistic; records of names only (a DataFrame) refuse a name with a "|".
  `groups[name]` averages the pairs whose annotators both have records in that group.
- Cohen's kappa where the two annotators gave different constant values is 0 (as sklearn),
  not undefined: only expected agreement 1 is 0/0.
- `fleiss_kappa_per_label` needs the same condition as `fleiss_kappa` (>= 3 annotators,
  complete data). `fleiss_kappa_complete_cards` is computed whenever there are >= 3
  annotators and a card rated by every one of them; with complete data it equals
  `fleiss_kappa`.
- Krippendorff's alpha with a single value among the pairable records is null (0/0), where
  nltk returns 1 and `krippendorff` raises or returns NaN.
- `prevalence` is over all cards of the consensus mapping.

Extras beyond the table
-----------------------
- `pairs[..].cohen_kappa_ci`, `groups[..].cohen_kappa_ci`, `group_mean.cohen_kappa_ci`:
  bootstrap 95% percentile
  intervals (numpy's default linear percentile) over `n_boot` resamples of cards with
  replacement, from `numpy.random.default_rng(seed)`, fresh for every interval so a group of
  one pair gets exactly its pair's interval. The group interval resamples the cards of the
  group (the union of its pairs' common cards) jointly for all its pairs and averages the
  pairs' kappas per resample. Resampling n cards uniformly with replacement is a multinomial
  draw over the cards; cards with the same labels from every annotator of the group are
  interchangeable, so the draw is done over those distinct patterns (exact same
  distribution, independent of the number of cards). Resamples where the statistic is
  undefined are left out. `n_boot=0` switches the intervals off (null with a reason).
- `pairs[..].pabak`: (k * po - 1) / (k - 1) with k = 2 ** len(codes), the number of possible
  label sets; `pairs[..].per_label_pabak[label]` = 2 * po - 1; `pairs[..].per_label_ac1`:
  Gwet's AC1 on the label's present/absent vectors, pe = 2 * q * (1 - q) with q the mean
  share of "present" over both annotators.

Implementation: records become integer arrays (card, annotator, group), a uint64 bitmask of
labels per record (so at most 64 codes per axis) and a set-as-category code, sorted by
(card, annotator). Everything is then built from one list: all pairs of records on the same
card (at offsets 1 .. m-1 of the sorted records, no join). A pair of annotators is its slice
of that list; it is reduced to the counts of its distinct (category, category) cells by
np.bincount, and every per-pair number (set, per-label and micro kappa, PABAK, AC1, the
bootstrap) comes from those few cells. Krippendorff's alphas and Fleiss' kappas sum the same
record pairs per card (coincidences without a cards x values array; per label from the XOR
of the two masks); MASI distances come from popcounts of mask intersections and unions.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist

import numpy as np
import pandas as pd

DEFAULT_N_BOOT = 1000
MAX_CODES = 64
REQUIRED_COLUMNS = ("card", "annotator", "group", "labels")
# below this many cells the (category x category) table is counted densely with bincount
_DENSE_CELLS = 1 << 22
# the bootstrap works on blocks of resamples x patterns of about this many numbers
_BOOT_BLOCK = 4_000_000

_NO_COMMON = "undefined: the two annotators have no common card"
_KAPPA_CONSTANT = (
    "undefined: both annotators gave one and the same value on every common card "
    "(expected agreement 1)"
)
_NO_DEFINED_PAIR = "undefined: no pair has a defined value"
_NO_DEFINED_LABEL = "undefined: no label has a defined value"
_NO_PAIRABLE = "undefined: no card has records from two annotators"
_FEW_ANNOTATORS = "not applicable: Fleiss' kappa needs at least 3 annotators"
_INCOMPLETE = (
    "not applicable: incomplete data (not every annotator rated every card); "
    "see fleiss_kappa_complete_cards"
)
_NO_COMPLETE_CARD = "undefined: no card was rated by every annotator"
_NO_CONSENSUS = "undefined: no consensus labels"
_BOOT_OFF = "not applicable: bootstrap switched off (n_boot=0)"
_BOOT_POINT_UNDEFINED = "undefined: the kappa itself is undefined"
_BOOT_ALL_UNDEFINED = "undefined: the kappa is undefined on every resample"


@dataclass(frozen=True)
class Encoded:
    """Records of one axis as arrays, sorted by (card, annotator)."""

    codes: list[str]
    card: np.ndarray  # int64 index into `cards`
    annotator: np.ndarray  # int64 index into `annotators` (sorted names)
    group: np.ndarray  # int64 index into `groups` (sorted names)
    mask: np.ndarray  # uint64: bit i set = codes[i] given
    cat: np.ndarray  # int64 set-as-category code: index into cat_mask
    cat_mask: np.ndarray  # uint64 mask of each category, ascending
    cards: pd.Index
    annotators: list[str]
    groups: list[str]
    # the annotators' ids (database keys), when given (encode_axes): pairs are then keyed by
    # ids and name both annotators (pair_key, pair_names); else by the names themselves
    ids: list[int] | None = None


def pair_key(enc: Encoded, a: int, b: int) -> str:
    """The key of the pair of annotators a < b (indexes, in the order of their names): "a|b"
    of their ids when the records have ids, else of their names (which then hold no "|")."""
    keys = enc.annotators if enc.ids is None else enc.ids
    return f"{keys[a]}|{keys[b]}"


def pair_names(enc: Encoded, a: int, b: int) -> dict:
    """What a pair's entry says of its two annotators when pairs are keyed by ids:
    {"a": {"id", "name"}, "b": {...}}; nothing when the names are the keys."""
    if enc.ids is None:
        return {}
    return {
        "a": {"id": enc.ids[a], "name": enc.annotators[a]},
        "b": {"id": enc.ids[b], "name": enc.annotators[b]},
    }


def _refuse_separator(names: Iterable) -> None:
    """Names that key pairs cannot hold the separator (a study's report keys them by ids)."""
    for name in names:
        if "|" in str(name):
            raise ValueError(f"annotator {name!r}: '|' is reserved for pair keys")


# ---------------------------------------------------------------------------------------
# Input


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _row_label(records: pd.DataFrame, position: int) -> str:
    return f"row {_plain(records.index[position])!r}"


def _label_masks(
    values: np.ndarray, bit: dict[str, int], where: Sequence[str] | None = None
) -> np.ndarray:
    """uint64 bitmask per value; `where` names each value's position for error messages."""
    try:
        idx, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:
        # lists are unhashable: compare label sets as frozensets
        values = np.array(
            [frozenset(v) if isinstance(v, list | tuple | set | np.ndarray) else v for v in values],
            dtype=object,
        )
        idx, uniques = pd.factorize(values, use_na_sentinel=True)
    if (idx < 0).any():
        at = where[int(np.flatnonzero(idx < 0)[0])] if where is not None else ""
        raise ValueError(f"{at}: field 'labels' is missing (use an empty list for no smell)")
    unique_masks = np.zeros(len(uniques), dtype=np.uint64)
    for j, labels in enumerate(uniques):
        if isinstance(labels, str) or not isinstance(labels, Iterable):
            at = where[int(np.argmax(idx == j))] if where is not None else ""
            raise ValueError(
                f"{at}: field 'labels' must be a list or set of label codes, got {labels!r}"
            )
        m = 0
        for code in labels:
            if code not in bit:
                at = where[int(np.argmax(idx == j))] if where is not None else ""
                raise ValueError(f"{at}: field 'labels' has unknown label code {code!r}")
            m |= bit[code]
        unique_masks[j] = m
    return unique_masks[idx]


def _checked_codes(codes: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    codes = list(codes)
    if len(set(codes)) != len(codes):
        raise ValueError(f"codes: duplicate label codes in {codes!r}")
    if len(codes) > MAX_CODES:
        raise ValueError(f"codes: at most {MAX_CODES} label codes per axis, got {len(codes)}")
    return codes, {c: 1 << i for i, c in enumerate(codes)}


def encode(records: pd.DataFrame, codes: Sequence[str]) -> Encoded:
    """Validate and encode the records; a bad record raises ValueError naming its row."""
    missing = [c for c in REQUIRED_COLUMNS if c not in records.columns]
    if missing:
        raise ValueError(f"records: missing column(s) {', '.join(missing)}")
    codes, bit = _checked_codes(codes)
    n = len(records)

    def factorized(column: str, sort: bool) -> tuple[np.ndarray, pd.Index]:
        values = records[column].to_numpy() if records[column].dtype.kind in "iu" else None
        if values is not None and n and 0 <= values.min() and values.max() < 4 * n:
            # small non-negative integer ids (database keys): a bincount ranks them in O(n)
            present = np.bincount(values.astype(np.int64)) > 0
            rank = np.cumsum(present) - 1
            return rank[values], pd.Index(np.flatnonzero(present))
        idx, uniques = pd.factorize(records[column], sort=sort, use_na_sentinel=True)
        if (idx < 0).any():
            at = _row_label(records, int(np.flatnonzero(idx < 0)[0]))
            raise ValueError(f"{at}: field {column!r} is missing")
        return idx.astype(np.int64), pd.Index(uniques)

    card, cards = factorized("card", sort=False)
    annotator, annotators = factorized("annotator", sort=True)
    group, groups = factorized("group", sort=True)
    _refuse_separator(annotators)

    where = _LazyRows(records)
    mask = _label_masks(records["labels"].to_numpy(dtype=object), bit, where)

    def duplicate(first: int, second: int) -> ValueError:
        card_id, annotator_name = (_plain(records[c].iloc[second]) for c in ("card", "annotator"))
        return ValueError(
            f"{_row_label(records, second)}: duplicate record for card {card_id!r} and "
            f"annotator {annotator_name!r} (first at {_row_label(records, first)})"
        )

    order = _record_order(card, annotator, len(annotators), duplicate)
    if order is not None:
        card, annotator, group, mask = card[order], annotator[order], group[order], mask[order]
    return _encoded(
        codes, card, annotator, group, mask, cards, [str(a) for a in annotators], groups
    )


def _record_order(
    card: np.ndarray, annotator: np.ndarray, n_annotators: int, duplicate
) -> np.ndarray | None:
    """The permutation that sorts records by (card, annotator), None when they already are;
    raises duplicate(first, second) (positions before sorting) for two records of one
    annotator on one card."""
    n = len(card)
    key = card * max(n_annotators, 1) + annotator
    order = None
    if n > 1 and not (key[1:] >= key[:-1]).all():
        order = np.argsort(key, kind="stable")
        key = key[order]
    dup = np.flatnonzero(key[1:] == key[:-1]) if n > 1 else np.empty(0, np.int64)
    if len(dup):
        first, second = int(dup[0]), int(dup[0]) + 1
        if order is not None:
            first, second = int(order[first]), int(order[second])
        raise duplicate(first, second)
    return order


def _encoded(
    codes: list[str],
    card: np.ndarray,
    annotator: np.ndarray,
    group: np.ndarray,
    mask: np.ndarray,
    cards: pd.Index,
    annotators: list[str],
    groups: Sequence,
    ids: list[int] | None = None,
) -> Encoded:
    """Encoded of records sorted by (card, annotator): the set-as-category codes added."""
    cat, cat_mask = _categories(mask)
    return Encoded(
        codes=codes,
        card=card,
        annotator=annotator,
        group=group,
        mask=mask,
        cat=cat,
        cat_mask=cat_mask,
        cards=cards,
        annotators=annotators,
        groups=[str(g) for g in groups],
        ids=ids,
    )


def _categories(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each mask into the distinct masks, the distinct masks ascending), as
    np.unique(mask, return_inverse=True) gives them: factorize hashes (linear), and only
    the few distinct masks are sorted."""
    first_seen, distinct = pd.factorize(mask)
    order_distinct = np.argsort(distinct)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[order_distinct] = np.arange(len(distinct))
    cat, cat_mask = rank[first_seen], np.asarray(distinct, dtype=np.uint64)[order_distinct]
    return cat.astype(np.int64).reshape(-1), cat_mask.astype(np.uint64)


def _ranked_ids(ids: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """Index of each id into its distinct ids, ascending (the card column of `encode`)."""
    n = len(ids)
    low = int(ids.min()) if n else 0
    if n and int(ids.max()) - low < 4 * n:
        # ids in a narrow range (database keys of one study): a bincount ranks them in O(n)
        present = np.bincount(ids - low) > 0
        rank = np.cumsum(present) - 1
        return rank[ids - low], pd.Index(np.flatnonzero(present) + low)
    distinct, inverse = np.unique(ids, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), pd.Index(distinct)


def _ranked_names(
    index: np.ndarray, names: Sequence[str]
) -> tuple[np.ndarray, list[str], list[int]]:
    """Index of each record into the names its records use, sorted (as `encode` has them),
    and where each of those names is in `names`."""
    used = np.flatnonzero(np.bincount(index, minlength=len(names)))
    used_names = [str(names[i]) for i in used]
    by_name = sorted(range(len(used)), key=used_names.__getitem__)
    new_index = np.full(len(names), -1, dtype=np.int64)
    new_index[used[by_name]] = np.arange(len(used))
    return new_index[index], [used_names[k] for k in by_name], used[by_name].tolist()


def encode_axes(
    codes: Mapping[str, Sequence[str]],
    card: np.ndarray,
    annotator: np.ndarray,
    annotators: Sequence[str],
    group: np.ndarray,
    groups: Sequence[str],
    masks: Mapping[str, np.ndarray],
    ids: Sequence[int] | None = None,
) -> dict[str, Encoded]:
    """Records already as arrays, the same records on every axis: `card` holds card ids
    (integers), `annotator` and `group` index the name lists `annotators` and `groups`
    (names no record uses are left out), `masks[axis]` is the label bitmask of each record
    in the bit order of `codes[axis]`. Gives per axis what `encode` gives for the records
    as a DataFrame, cards in ascending order. Records sorted by (card, annotator name) are
    not sorted again: the check is one pass. `ids`: the annotators' ids (database keys),
    parallel to `annotators`: pairs are then keyed by ids and any name is fine; without
    them, by names, which may not hold "|"."""
    card = np.asarray(card, dtype=np.int64)
    annotator = np.asarray(annotator, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    card_index, cards = _ranked_ids(card)
    annotator, names, positions = _ranked_names(annotator, annotators)
    used_ids = None if ids is None else [int(ids[p]) for p in positions]
    if ids is None:
        _refuse_separator(names)
    group, group_names, _ = _ranked_names(group, groups)

    def duplicate(first: int, second: int) -> ValueError:
        return ValueError(
            f"card {_plain(card[second])!r}: two records of annotator {names[annotator[second]]!r}"
        )

    order = _record_order(card_index, annotator, len(names), duplicate)
    if order is not None:
        card_index, annotator, group = card_index[order], annotator[order], group[order]
    out = {}
    for axis, axis_codes in codes.items():
        checked, _ = _checked_codes(axis_codes)
        mask = np.asarray(masks[axis], dtype=np.uint64)
        if order is not None:
            mask = mask[order]
        out[axis] = _encoded(
            checked, card_index, annotator, group, mask, cards, names, group_names, used_ids
        )
    return out


class _LazyRows(Sequence):
    """Row names for error messages, built only when an error is raised."""

    def __init__(self, records: pd.DataFrame) -> None:
        self._records = records

    def __getitem__(self, position):  # type: ignore[override]
        return _row_label(self._records, int(position))

    def __len__(self) -> int:
        return len(self._records)


def _masks_of_mapping(mapping: Mapping[Hashable, Iterable[str]], bit: dict[str, int]) -> np.ndarray:
    keys = list(mapping.keys())
    values = np.empty(len(keys), dtype=object)
    values[:] = [mapping[k] for k in keys]
    where = [f"card {k!r}" for k in keys]
    return _label_masks(values, bit, where) if len(keys) else np.zeros(0, np.uint64)


@dataclass(frozen=True)
class Reference:
    """Label sets per card, already encoded: a consensus (for `prevalence`, the extras) or
    the truth of `versus_reference`. `card`: card ids, each once; `mask`: the uint64 label
    mask of each, in the bit order of the axis's codes."""

    card: np.ndarray | pd.Index
    mask: np.ndarray

    def __len__(self) -> int:
        return len(self.mask)

    @classmethod
    def of(cls, mapping: Mapping[Hashable, Iterable[str]], codes: Sequence[str]) -> Reference:
        """A card -> label codes mapping, validated (an unknown code raises ValueError)."""
        _, bit = _checked_codes(codes)
        return cls(card=pd.Index(list(mapping.keys())), mask=_masks_of_mapping(mapping, bit))


CardSets = Mapping[Hashable, Iterable[str]] | Reference


def _as_reference(consensus: CardSets | None, codes: Sequence[str]) -> Reference | None:
    """None for no consensus (None or empty), else a Reference."""
    if consensus is None or not len(consensus):
        return None
    return consensus if isinstance(consensus, Reference) else Reference.of(consensus, codes)


# ---------------------------------------------------------------------------------------
# Small numeric helpers


def _bits(masks: np.ndarray, n_codes: int) -> np.ndarray:
    """(len(masks), n_codes) int64 0/1 matrix of the masks' bits."""
    shifts = np.arange(n_codes, dtype=np.uint64)
    return ((masks.astype(np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.int64)


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x).astype(np.int64)


def masi_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MASI distance (Passonneau 2006) of label bitmasks, elementwise and broadcasting:
    1 - J * M, J = |a & b| / |a | b|, M = 1 (equal), 2/3 (one a subset of the other),
    1/3 (overlap), 0 (disjoint); distance(empty, empty) = 0."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    inter = _popcount(a & b)
    union = _popcount(a | b)
    smaller = np.minimum(_popcount(a), _popcount(b))
    m = np.where(a == b, 1.0, np.where(inter == smaller, 2 / 3, np.where(inter > 0, 1 / 3, 0.0)))
    jaccard = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return 1.0 - jaccard * m


def _cohen(n: int, agree: int, sum_marginal_products: int) -> float | None:
    """Cohen's kappa from counts, computed as sklearn does: 1 - observed / expected
    disagreement; None when expected disagreement is 0."""
    denominator = n * n - sum_marginal_products
    if n == 0 or denominator == 0:
        return None
    return 1.0 - n * (n - agree) / denominator


def _mean_defined(values: Iterable[float | None]) -> tuple[float | None, int]:
    defined = [v for v in values if v is not None]
    return (float(np.mean(defined)) if defined else None), len(defined)


def _put(out: dict, key: str, value: float | None, reason: str | None) -> None:
    out[key] = None if value is None else float(value)
    if value is None:
        out[f"{key}_reason"] = reason


def _put_labels(
    out: dict, key: str, codes: Sequence[str], values: Sequence[tuple[float | None, str | None]]
) -> None:
    out[key] = {
        c: (None if v is None else float(v)) for c, (v, _) in zip(codes, values, strict=True)
    }
    reasons = {c: r for c, (v, r) in zip(codes, values, strict=True) if v is None}
    if reasons:
        out[f"{key}_reason"] = reasons


# ---------------------------------------------------------------------------------------
# Two annotators: everything comes from the counts of (category, category) cells


def _count_cells(cells: np.ndarray, n_possible: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct cells, ascending, and how often each occurs."""
    if n_possible <= max(_DENSE_CELLS, 4 * len(cells)):
        counts = np.bincount(cells, minlength=n_possible)
        present = np.flatnonzero(counts)
        return present.astype(np.int64), counts[present].astype(np.int64)
    present, counts = np.unique(cells, return_counts=True)
    return present.astype(np.int64), counts.astype(np.int64)


@dataclass(frozen=True)
class _Cells:
    """Counts of (x category, y category) over the common cards of two raters."""

    x: np.ndarray  # category of rater x per distinct cell
    y: np.ndarray
    count: np.ndarray  # int64
    x_mask: np.ndarray  # label mask of x per distinct cell
    y_mask: np.ndarray

    @property
    def n(self) -> int:
        return int(self.count.sum())


def _cells(cx: np.ndarray, cy: np.ndarray, cat_mask: np.ndarray) -> _Cells:
    v = len(cat_mask)
    present, count = _count_cells(cx * v + cy, v * v)
    x, y = present // v, present % v
    return _Cells(x=x, y=y, count=count, x_mask=cat_mask[x], y_mask=cat_mask[y])


def _set_kappa(c: _Cells) -> tuple[float | None, int, int]:
    """(kappa, n, agreements) with the whole label set as one category."""
    n = c.n
    agree = int(c.count[c.x == c.y].sum())
    size = int(max(c.x.max(initial=-1), c.y.max(initial=-1))) + 1
    pa = np.bincount(c.x, weights=c.count, minlength=size).astype(np.int64)
    pb = np.bincount(c.y, weights=c.count, minlength=size).astype(np.int64)
    return _cohen(n, agree, int((pa * pb).sum())), n, agree


def _label_tables(c: _Cells, n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per label: (x present, y present, both present) counts."""
    bx, by = _bits(c.x_mask, n_codes), _bits(c.y_mask, n_codes)
    return c.count @ bx, c.count @ by, c.count @ (bx & by)


def _binary_kappa(n: int, a1: int, b1: int, n11: int) -> float | None:
    agree = n - a1 - b1 + 2 * n11
    return _cohen(n, agree, a1 * b1 + (n - a1) * (n - b1))


def _binary_reason(n: int, a1: int, b1: int) -> str:
    if n == 0:
        return _NO_COMMON
    if a1 == 0 and b1 == 0:
        return "undefined: neither annotator gave the label on the common cards"
    return "undefined: both annotators gave the label on every common card"


def _pair_report(c: _Cells, codes: Sequence[str]) -> dict:
    n_codes = len(codes)
    out: dict = {"n_common_cards": c.n}
    kappa, n, agree = _set_kappa(c)
    _put(out, "percent_agreement", agree / n if n else None, _NO_COMMON)
    _put(out, "cohen_kappa", kappa, _NO_COMMON if n == 0 else _KAPPA_CONSTANT)
    k = 2.0**n_codes
    pabak = (k * agree / n - 1) / (k - 1) if n and n_codes else None
    _put(out, "pabak", pabak, _NO_COMMON if n == 0 else "undefined: the axis has no label")

    a1, b1, n11 = (t.tolist() for t in _label_tables(c, n_codes))
    kappas, pabaks, ac1s = [], [], []
    for i in range(n_codes):
        kappa_l = _binary_kappa(n, a1[i], b1[i], n11[i])
        kappas.append((kappa_l, None if kappa_l is not None else _binary_reason(n, a1[i], b1[i])))
        if n == 0:
            pabaks.append((None, _NO_COMMON))
            ac1s.append((None, _NO_COMMON))
            continue
        po = (n - a1[i] - b1[i] + 2 * n11[i]) / n
        pabaks.append((2 * po - 1, None))
        q = (a1[i] + b1[i]) / (2 * n)
        pe = 2 * q * (1 - q)  # at most 1/2, so AC1 is defined whenever there is a card
        ac1s.append(((po - pe) / (1 - pe), None))
    _put_labels(out, "per_label_kappa", codes, kappas)
    macro, n_defined = _mean_defined(v for v, _ in kappas)
    _put(out, "per_label_kappa_macro", macro, _NO_COMMON if n == 0 else _NO_DEFINED_LABEL)
    out["per_label_kappa_macro_n_defined"] = n_defined
    micro = _binary_kappa(n * n_codes, sum(a1), sum(b1), sum(n11)) if n_codes else None
    micro_reason = _NO_COMMON if n == 0 else _binary_reason(n * n_codes, sum(a1), sum(b1))
    _put(out, "per_label_kappa_micro", micro, micro_reason)
    _put_labels(out, "per_label_pabak", codes, pabaks)
    _put_labels(out, "per_label_ac1", codes, ac1s)
    return out


# ---------------------------------------------------------------------------------------
# Bootstrap


def _col_sums(w: np.ndarray, keys: np.ndarray, n_keys: int) -> np.ndarray:
    """(B, n_keys): the columns of w (B, U) summed by their key (U,)."""
    out = np.zeros((w.shape[0], n_keys))
    if w.shape[1] == 0:
        return out
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    out[:, sorted_keys[starts]] = np.add.reduceat(w[:, order], starts, axis=1)
    return out


def _resampled_kappas(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cohen's kappa per resample; w (B, U) counts of the pair's cells (x[u], y[u]); -1 in x
    marks patterns where the pair has no common card. NaN where undefined."""
    valid = x >= 0
    w, x, y = w[:, valid], x[valid], y[valid]
    categories, compact = np.unique(np.r_[x, y], return_inverse=True)
    cx, cy = compact[: len(x)], compact[len(x) :]
    n = w.sum(axis=1)
    agree = w[:, x == y].sum(axis=1)
    pa = _col_sums(w, cx, len(categories))
    pb = _col_sums(w, cy, len(categories))
    denominator = n * n - (pa * pb).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - n * (n - agree) / denominator
    kappa[(denominator == 0) | (n == 0)] = np.nan
    return kappa


def _bootstrap_ci(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], n_categories: int, n_boot: int, seed: int
) -> tuple[list[float] | None, str | None]:
    """95% percentile interval of the mean Cohen's kappa of `pairs` (each: the indices of
    its common cards and the cell code x * n_categories + y on each), resampling the union
    of their cards."""
    if len(pairs) == 1:
        patterns, counts = _count_cells(pairs[0][1], n_categories * n_categories)
        patterns = patterns[:, None]
    else:
        cards = np.unique(np.concatenate([p[0] for p in pairs]))
        table = np.full((len(cards), len(pairs)), -1, dtype=np.int64)
        for j, (pair_cards, cells) in enumerate(pairs):
            table[np.searchsorted(cards, pair_cards), j] = cells
        radix = n_categories * n_categories + 1
        if radix ** len(pairs) < 1 << 62:
            # one int64 key per card (cell + 1 in base `radix`) sorts much faster than rows
            powers = radix ** np.arange(len(pairs), dtype=np.int64)
            keys, counts = np.unique((table + 1) @ powers, return_counts=True)
            patterns = (keys[:, None] // powers) % radix - 1
        else:
            patterns, counts = np.unique(table, axis=0, return_counts=True)
    n_cards = int(counts.sum())
    if n_cards == 0:
        return None, _BOOT_POINT_UNDEFINED
    x = np.where(patterns >= 0, patterns // n_categories, -1)
    y = np.where(patterns >= 0, patterns % n_categories, -1)
    rng = np.random.default_rng(seed)
    block = max(1, _BOOT_BLOCK // max(len(counts), 1))
    means = []
    for start in range(0, n_boot, block):
        w = rng.multinomial(n_cards, counts / n_cards, size=min(block, n_boot - start))
        w = w.astype(np.float64)
        kappas = np.column_stack(
            [_resampled_kappas(w, x[:, j], y[:, j]) for j in range(len(pairs))]
        )
        defined = ~np.isnan(kappas)
        n_defined = defined.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(np.where(defined, kappas, 0.0).sum(axis=1) / n_defined)
    values = np.concatenate(means)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None, _BOOT_ALL_UNDEFINED
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)], None


# ---------------------------------------------------------------------------------------
# The report


def _same_card_pairs(card: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All unordered pairs (i, j), i < j, of records on the same card (records sorted by
    card, so a card's records are contiguous and the pairs are at offsets 1 .. m - 1)."""
    first, second = [], []
    max_m = int(m.max(initial=0))
    for k in range(1, max_m):
        same = np.flatnonzero(card[:-k] == card[k:])
        first.append(same)
        second.append(same + k)
    if not first:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(first), np.concatenate(second)


def _rows_by_annotator(annotator: np.ndarray, n_annotators: int) -> list[np.ndarray]:
    # a small integer dtype lets numpy radix-sort; stable keeps each annotator's rows by card
    small = annotator.astype(np.uint16) if n_annotators < 1 << 16 else annotator
    order = np.argsort(small, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(annotator, minlength=n_annotators))]
    return [order[bounds[a] : bounds[a + 1]] for a in range(n_annotators)]


def _pairs_by_group(
    enc: Encoded,
) -> tuple[list[tuple[int, int]], dict[str, list[tuple[int, int]]]]:
    if len(enc.groups) == 1:
        everyone = list(combinations(range(len(enc.annotators)), 2))
        return everyone, {enc.groups[0]: everyone}
    n_ann = max(len(enc.annotators), 1)
    member = enc.group * n_ann + enc.annotator
    n_possible = len(enc.groups) * n_ann
    if n_possible <= max(_DENSE_CELLS, 4 * len(member)):
        members = np.flatnonzero(np.bincount(member, minlength=n_possible))
    else:
        members = np.unique(member)
    by_group: dict[str, list[tuple[int, int]]] = {}
    for g, name in enumerate(enc.groups):
        in_group = members[(members // n_ann) == g] % n_ann
        by_group[name] = list(combinations(sorted(int(a) for a in in_group), 2))
    all_pairs = sorted({p for ps in by_group.values() for p in ps})
    return all_pairs, by_group


def _kripp_per_label_reason(n1: int) -> str:
    if n1 == 0:
        return "undefined: the label is on no record of a pairable card"
    return "undefined: the label is on every record of the pairable cards"


def _fleiss(p_mean: float, p_cat: np.ndarray) -> float | None:
    pe = float((p_cat * p_cat).sum())
    if (p_cat > 0).sum() <= 1:
        return None
    return (p_mean - pe) / (1 - pe)


def fleiss_from_table(table: np.ndarray) -> tuple[float | None, float, float]:
    """Fleiss' kappa, P-bar and P-e of a subjects x categories count table with the same
    number of ratings per subject (kappa None when one category holds every rating)."""
    table = np.asarray(table, dtype=np.float64)
    n_raters = table.sum(axis=1)[0]
    p_cat = table.sum(axis=0) / table.sum()
    p_mean = float((((table * table).sum(axis=1) - n_raters) / (n_raters * (n_raters - 1))).mean())
    return _fleiss(p_mean, p_cat), p_mean, float((p_cat * p_cat).sum())


def agreement_report(
    records: pd.DataFrame,
    codes: Sequence[str],
    consensus: Mapping[Hashable, Iterable[str]] | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict:
    """The agreement report of one axis (see the module docstring)."""
    return report_from_encoded(encode(records, codes), consensus, n_boot=n_boot, seed=seed)


def agreement_reports(
    axes: Mapping[str, tuple], *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0
) -> dict[str, dict]:
    """{axis: (records, codes) or (records, codes, consensus)} -> {axis: report}."""
    out = {}
    for axis, spec in axes.items():
        records, codes, *rest = spec
        consensus = rest[0] if rest else None
        out[axis] = agreement_report(records, codes, consensus, n_boot=n_boot, seed=seed)
    return out


def report_from_encoded(
    enc: Encoded,
    consensus: CardSets | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict:
    """The report of `agreement_report` from already encoded records; `consensus` may be
    a Reference (in the bit order of `enc.codes`)."""
    n_cards = len(enc.cards)
    report: dict = {
        "n_cards": n_cards,
        "n_annotators": len(enc.annotators),
        "n_annotations": len(enc.card),
    }
    m = np.bincount(enc.card, minlength=n_cards)
    report["n_pairable_cards"] = int((m >= 2).sum())
    # every statistic is built from the pairs of records on the same card
    i, j = _same_card_pairs(enc.card, m)
    same = _SameCard(i=i, j=j, card=enc.card[i], cat_i=enc.cat[i], cat_j=enc.cat[j], m=m)
    pairs, by_group = _pairs_by_group(enc)
    report.update(_pairs_section(enc, same, pairs, by_group, n_boot, seed))
    report.update(_cards_section(enc, same))
    _put_labels(report, "prevalence", enc.codes, _prevalence(consensus, enc.codes))
    return report


@dataclass(frozen=True)
class _SameCard:
    """All unordered pairs (i, j) of records on the same card, with what every statistic
    needs of them; `m` = records per card."""

    i: np.ndarray
    j: np.ndarray
    card: np.ndarray
    cat_i: np.ndarray
    cat_j: np.ndarray
    m: np.ndarray


def _same_card_pairs_of(
    enc: Encoded, same: _SameCard, pairs: list[tuple[int, int]]
) -> dict[tuple[int, int], np.ndarray | slice]:
    """For each pair of annotators (a, b), a < b: which same-card pairs are theirs (one per
    common card). Records are sorted by (card, annotator), so annotator[i] < annotator[j]."""
    n_ann = len(enc.annotators)
    if n_ann == 2:
        # every same-card pair is (0, 1): nothing to select
        return {p: slice(None) for p in pairs}
    who = enc.annotator[same.i] * n_ann + enc.annotator[same.j]
    # a small integer dtype lets numpy radix-sort
    order = np.argsort(who.astype(np.uint16) if n_ann < 256 else who, kind="stable")
    sorted_who = who[order]
    out: dict[tuple[int, int], np.ndarray | slice] = {}
    for a, b in pairs:
        lo, hi = np.searchsorted(sorted_who, [a * n_ann + b, a * n_ann + b + 1])
        out[(a, b)] = order[lo:hi]
    return out


def _pairs_section(
    enc: Encoded,
    same: _SameCard,
    pairs: list[tuple[int, int]],
    by_group: dict[str, list[tuple[int, int]]],
    n_boot: int,
    seed: int,
) -> dict:
    codes, n_cat = enc.codes, len(enc.cat_mask)
    reports: dict[tuple[int, int], dict] = {}
    joined: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for pair, sel in _same_card_pairs_of(enc, same, pairs).items():
        cx, cy = same.cat_i[sel], same.cat_j[sel]
        reports[pair] = _pair_report(_cells(cx, cy, enc.cat_mask), codes)
        if n_boot > 0:
            joined[pair] = (same.card[sel], cx * n_cat + cy)

    ci_cache: dict[tuple[tuple[int, int], ...], tuple[list[float] | None, str | None]] = {}

    def with_ci(out: dict, members: list[tuple[int, int]]) -> dict:
        if n_boot <= 0:
            interval, reason = None, _BOOT_OFF
        elif out["cohen_kappa"] is None:
            interval, reason = None, _BOOT_POINT_UNDEFINED
        else:
            key = tuple(members)
            if key not in ci_cache:
                ci_cache[key] = _bootstrap_ci([joined[p] for p in members], n_cat, n_boot, seed)
            interval, reason = ci_cache[key]
        # keep the interval next to the kappa it belongs to
        ordered: dict = {}
        for k, v in out.items():
            ordered[k] = v
            if k == ("cohen_kappa_reason" if out["cohen_kappa"] is None else "cohen_kappa"):
                _put_interval(ordered, interval, reason)
        return ordered

    out_pairs = {
        pair_key(enc, a, b): {**pair_names(enc, a, b), **with_ci(reports[(a, b)], [(a, b)])}
        for a, b in pairs
    }

    def means(members: list[tuple[int, int]]) -> dict:
        out: dict = {}
        for key in _MEAN_KEYS:
            value, _ = _mean_defined(reports[p][key] for p in members)
            _put(out, key, value, _NO_DEFINED_PAIR)
        return out

    groups = {name: with_ci(means(members), members) for name, members in by_group.items()}
    # the overall mean gets its interval the same way, resampling all pairable cards
    return {"pairs": out_pairs, "group_mean": with_ci(means(pairs), pairs), "groups": groups}


_MEAN_KEYS = ("cohen_kappa", "percent_agreement", "per_label_kappa_macro", "per_label_kappa_micro")


def _put_interval(out: dict, interval: list[float] | None, reason: str | None) -> None:
    out["cohen_kappa_ci"] = interval
    if interval is None:
        out["cohen_kappa_ci_reason"] = reason


def _cards_section(enc: Encoded, same: _SameCard) -> dict:
    """Statistics over all records of each card: percent agreement over cards,
    Krippendorff's alphas and Fleiss' kappas."""
    codes, n_codes, m, i, j = enc.codes, len(enc.codes), same.m, same.i, same.j
    out: dict = {}
    agree = same.cat_i == same.cat_j
    n_agree = int(agree.sum())
    agree_on_card = np.bincount(same.card[agree], minlength=len(m))
    # per-card sums depend on a card only through its m: sum them per value of m
    cards_by_m = np.bincount(m)
    two_per_card = len(cards_by_m) <= 3
    if two_per_card:
        agree_by_m = np.zeros(len(cards_by_m))
        agree_by_m[2:] = n_agree
    else:
        agree_by_m = np.bincount(m, weights=agree_on_card)
    ms = np.arange(len(cards_by_m))[2:]
    agree_by_m, cards_by_m = agree_by_m[2:], cards_by_m[2:]
    n_pairable = int(cards_by_m.sum())
    pairs_per_card = ms * (ms - 1) / 2

    if n_pairable:
        if two_per_card:
            all_agree = n_agree
        else:
            # cards where all pairs agree; cards with one record have 0 = 0 pairs: removed
            all_agree = int((agree_on_card == m * (m - 1) // 2).sum()) - int((m < 2).sum())
        all_agree_share = all_agree / n_pairable
        mean_pairwise = float((agree_by_m / pairs_per_card).sum()) / n_pairable
    else:
        all_agree_share = mean_pairwise = None
    _put(out, "percent_agreement_all", all_agree_share, _NO_PAIRABLE)
    _put(out, "mean_pairwise_percent_agreement", mean_pairwise, _NO_PAIRABLE)

    # Krippendorff: observed disagreement = sum over ordered pairs of d(i, j) / (m_u - 1),
    # n_c = how often each value is on a pairable card
    n_values = int((ms * cards_by_m).sum())
    n_c = np.bincount(enc.cat, minlength=len(enc.cat_mask))
    single_cards = np.flatnonzero(m == 1)
    if len(single_cards):
        first_record = np.cumsum(m) - m
        n_c = n_c - np.bincount(enc.cat[first_record[single_cards]], minlength=len(n_c))
    observed = float((ms * cards_by_m).sum() - (2 * agree_by_m / (ms - 1)).sum())
    expected = (n_values * n_values - int((n_c.astype(np.int64) ** 2).sum())) / max(n_values - 1, 1)
    alpha = 1 - observed / expected if n_values and expected > 0 else None
    single = "undefined: one and the same label set on every record of the pairable cards"
    _put(out, "krippendorff_alpha_nominal", alpha, _NO_PAIRABLE if not n_values else single)

    differ = np.flatnonzero(~agree)
    a_mask, b_mask = enc.mask[i[differ]], enc.mask[j[differ]]
    weight = np.full(len(differ), 2.0) if two_per_card else 2.0 / (m[same.card[differ]] - 1)
    xor_idx, xor_values = pd.factorize(a_mask ^ b_mask)
    xor_bits = _bits(np.asarray(xor_values, dtype=np.uint64), n_codes)
    observed_l = np.bincount(xor_idx, weights=weight, minlength=len(xor_values)) @ xor_bits
    n1 = (n_c @ _bits(enc.cat_mask, n_codes)).astype(np.int64)
    per_label = []
    for label in range(n_codes):
        n1_l = int(n1[label])
        expected_l = 2 * n1_l * (n_values - n1_l) / max(n_values - 1, 1)
        if not n_values:
            per_label.append((None, _NO_PAIRABLE))
        elif expected_l == 0:
            per_label.append((None, _kripp_per_label_reason(n1_l)))
        else:
            per_label.append((1 - float(observed_l[label]) / expected_l, None))
    _put_labels(out, "krippendorff_alpha_nominal_per_label", codes, per_label)

    # MASI: only pairs with different sets have a distance above 0
    observed_masi = float((weight * masi_distance(a_mask, b_mask)).sum())
    expected_masi = _expected_masi(enc.cat_mask, n_c) / max(n_values - 1, 1)
    masi = 1 - observed_masi / expected_masi if n_values and expected_masi > 0 else None
    _put(out, "krippendorff_alpha_masi", masi, _NO_PAIRABLE if not n_values else single)

    out.update(_fleiss_section(enc, m, agree_on_card, xor_idx, xor_bits))
    return out


def _expected_masi(cat_mask: np.ndarray, n_c: np.ndarray) -> float:
    """sum over value pairs n_c * n_k * MASI(c, k), in row blocks to bound memory."""
    used = np.flatnonzero(n_c)
    masks, counts = cat_mask[used], n_c[used].astype(np.float64)
    total = 0.0
    block = max(1, 1_000_000 // max(len(used), 1))
    for start in range(0, len(used), block):
        d = masi_distance(masks[start : start + block, None], masks[None, :])
        total += float((counts[start : start + block, None] * counts[None, :] * d).sum())
    return total


def _fleiss_section(
    enc: Encoded,
    m: np.ndarray,
    agree_on_card: np.ndarray,
    xor_idx: np.ndarray,
    xor_bits: np.ndarray,
) -> dict:
    codes, n_codes, n_ann = enc.codes, len(enc.codes), len(enc.annotators)
    out: dict = {}
    complete = m == n_ann
    n_complete = int(complete.sum())
    is_complete = n_complete == len(m) and n_complete > 0
    na = [(None, _FEW_ANNOTATORS)] * n_codes
    if n_ann < 3:
        _put(out, "fleiss_kappa", None, _FEW_ANNOTATORS)
        _put_labels(out, "fleiss_kappa_per_label", codes, na)
        _put(out, "fleiss_kappa_per_label_macro", None, _FEW_ANNOTATORS)
        out["fleiss_kappa_per_label_macro_n_defined"] = 0
        _put(out, "fleiss_kappa_complete_cards", None, _FEW_ANNOTATORS)
        out["n_complete_cards"] = n_complete
        return out

    pairs_per_card = n_ann * (n_ann - 1) / 2
    n_ratings = n_complete * n_ann
    constant = "undefined: one and the same label set on every rating (expected agreement 1)"
    kappa = None
    if n_complete:
        p_mean = float((agree_on_card[complete] / pairs_per_card).mean())
        n_c = np.bincount(enc.cat[complete[enc.card]], minlength=len(enc.cat_mask))
        kappa = _fleiss(p_mean, n_c / n_ratings)
    complete_reason = _NO_COMPLETE_CARD if not n_complete else constant
    _put(
        out,
        "fleiss_kappa",
        kappa if is_complete else None,
        constant if is_complete else _INCOMPLETE,
    )

    per_label: list[tuple[float | None, str | None]] = [(None, _INCOMPLETE)] * n_codes
    if is_complete:
        # disagreeing pairs per label (= n1 * n0 on each card), over all cards
        disagree_l = np.bincount(xor_idx, minlength=xor_bits.shape[0]) @ xor_bits
        n1 = np.bincount(enc.cat, minlength=len(enc.cat_mask)) @ _bits(enc.cat_mask, n_codes)
        per_label = []
        for label in range(n_codes):
            p_mean_l = 1 - float(disagree_l[label]) / (n_complete * pairs_per_card)
            p1 = int(n1[label]) / n_ratings
            kappa_l = _fleiss(p_mean_l, np.array([1 - p1, p1]))
            reason = None
            if kappa_l is None:
                reason = (
                    "undefined: the label is on no rating"
                    if n1[label] == 0
                    else "undefined: the label is on every rating"
                )
            per_label.append((kappa_l, reason))
    _put_labels(out, "fleiss_kappa_per_label", codes, per_label)
    macro, n_defined = _mean_defined(v for v, _ in per_label)
    _put(
        out,
        "fleiss_kappa_per_label_macro",
        macro,
        _INCOMPLETE if not is_complete else _NO_DEFINED_LABEL,
    )
    out["fleiss_kappa_per_label_macro_n_defined"] = n_defined
    _put(out, "fleiss_kappa_complete_cards", kappa, complete_reason)
    out["n_complete_cards"] = n_complete
    return out


def _prevalence(
    consensus: CardSets | None, codes: Sequence[str]
) -> list[tuple[float | None, str | None]]:
    n_codes = len(codes)
    reference = _as_reference(consensus, codes)
    if reference is None:
        return [(None, _NO_CONSENSUS)] * n_codes
    share = _bits(reference.mask, n_codes).sum(axis=0) / len(reference)
    return [(float(s), None) for s in share]


# ---------------------------------------------------------------------------------------
# A proportion's interval


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> list[float] | None:
    """Wilson's score interval of the proportion successes / n, two-sided, no continuity
    correction, clipped to [0, 1] (statsmodels' proportion_confint(method="wilson")); None
    for n = 0."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p, z2 = successes / n, z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return [float(max(0.0, center - half)), float(min(1.0, center + half))]
