"""The split check's measures (annotation/intake/splitcheck), added by the agreement job to
the axis of a split-check study (data.py) as `split_check`; tables.py prints them.

Over boundaries (the `split-check` preset's axis, with `right_split`): the **accuracy**, the
share of checked split points labelled exactly "Right split", for the consensus (the
study-level gold) and for each annotator (a judge too, marked).

Over entries (the `split-check-entries` preset's `entry` axis): the **entry accuracy**, the
share of checked entries labelled exactly `correct`, with Wilson's 95% score interval
(stats.wilson_interval), for the consensus (`entry_accuracy`, `entry_accuracy_ci` at the top:
the study's "accuracy 92% on the consensus") and for each annotator; and Cohen's kappa on the
binary judgement correct / incorrect (any other label, or none, is incorrect) beside the full
one (the axis's kappa, every reason apart), per pair of annotators, per group and overall,
with the same bootstrap interval as the report's kappas.

An empty set or a set of another type counts as not right (not correct). JSON-able; an
undefined value is null with a `_reason`, as everywhere in the report.

`split_check_tables` gives the report's tables of either (spec.py): every output shows them
(the page, CSV with scope `split_check` and `split_check_kappa`, Markdown, LaTeX and the
`agreement` command)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..splitcheck_codes import CORRECT, ENTRY_AXIS, RIGHT_SPLIT
from .spec import EVERYWHERE, Cell, Column, Row, Table, cells, pair_label
from .stats import encode_axes, report_from_encoded, wilson_interval

CONFIDENCE = 0.95
NO_CONSENSUS = "undefined: no card has a consensus yet"
NO_LABEL = "undefined: no card labelled"


def _share(labels: Iterable[frozenset], right: str) -> dict:
    sets = list(labels)
    n_right = sum(1 for s in sets if s == frozenset({right}))
    out: dict = {"n_cards": len(sets), "n_right": n_right}
    if sets:
        out["accuracy"] = n_right / len(sets)
    else:
        out["accuracy"] = None
        out["accuracy_reason"] = NO_LABEL
    return out


def accuracy(
    consensus: Iterable[frozenset],
    annotators: Mapping[str, Iterable[frozenset]],
    *,
    judges: Iterable[str] = (),
    right: str = RIGHT_SPLIT,
) -> dict:
    """The share of checked split points labelled exactly {right} ("Right split"): over the
    cards with a consensus, and over each annotator's labelled cards."""
    judges = set(judges)
    consensus_share = _share(consensus, right)
    if consensus_share["accuracy"] is None:
        consensus_share["accuracy_reason"] = NO_CONSENSUS
    return {
        "unit": "boundaries",
        "right": right,
        "consensus": consensus_share,
        "annotators": {
            who: {**_share(sets, right), "judge": who in judges}
            for who, sets in sorted(annotators.items())
        },
    }


def _entry_share(labels: Iterable[frozenset], correct: str, undefined: str) -> dict:
    sets = list(labels)
    n_correct = sum(1 for s in sets if s == frozenset({correct}))
    n = len(sets)
    out: dict = {"n_cards": n, "n_correct": n_correct}
    if n:
        out["entry_accuracy"] = n_correct / n
        out["entry_accuracy_ci"] = wilson_interval(n_correct, n, CONFIDENCE)
    else:
        out["entry_accuracy"] = out["entry_accuracy_ci"] = None
        out["entry_accuracy_reason"] = out["entry_accuracy_ci_reason"] = undefined
    return out


def entry_accuracy(
    consensus: Iterable[frozenset],
    annotators: Mapping[str, Iterable[frozenset]],
    *,
    judges: Iterable[str] = (),
    correct: str = CORRECT,
) -> dict:
    """The entry accuracy with its Wilson interval: over the cards with a consensus (also
    at the top, the figure a methods section quotes) and over each annotator's cards."""
    judges = set(judges)
    top = _entry_share(consensus, correct, NO_CONSENSUS)
    return {
        "unit": "entries",
        "correct": correct,
        "confidence": CONFIDENCE,
        "interval": "wilson",
        **{k: v for k, v in top.items() if k.startswith("entry_accuracy")},
        "consensus": top,
        "annotators": {
            who: {**_entry_share(sets, correct, NO_LABEL), "judge": who in judges}
            for who, sets in sorted(annotators.items())
        },
    }


# what each pair and group of the binary report keeps (an absent `_reason`: defined)
_KEPT = (
    "a",  # a pair keyed by ids names its two annotators
    "b",
    "n_common_cards",
    "cohen_kappa",
    "cohen_kappa_reason",
    "cohen_kappa_ci",
    "cohen_kappa_ci_reason",
    "percent_agreement",
    "percent_agreement_reason",
)


def _beside(binary: Mapping, full: Mapping | None) -> dict:
    """A pair's or a group's binary kappa (its interval, its percent agreement) with the
    full kappa beside it."""
    out = {k: binary[k] for k in _KEPT if k in binary}
    full = full or {}
    out["cohen_kappa_full"] = full.get("cohen_kappa")
    if out["cohen_kappa_full"] is None:
        out["cohen_kappa_full_reason"] = full.get("cohen_kappa_reason", NO_LABEL)
    return out


def binary_kappa(binary: Mapping, full: Mapping) -> dict:
    """{"pairs", "group_mean", "groups"} of the report on the binary axis correct /
    incorrect (`binary`, stats.report_from_encoded), each with the full axis's kappa
    (`full`, the axis's report) beside it as `cohen_kappa_full`."""
    full_pairs, full_groups = full.get("pairs", {}), full.get("groups", {})
    return {
        "pairs": {
            key: _beside(pair, full_pairs.get(key)) for key, pair in binary.get("pairs", {}).items()
        },
        "group_mean": _beside(binary.get("group_mean", {}), full.get("group_mean")),
        "groups": {
            name: _beside(group, full_groups.get(name))
            for name, group in binary.get("groups", {}).items()
        },
    }


def split_check_measures(data, axis: str, report: dict, n_boot: int, seed: int) -> dict | None:
    """The split check's measures of an axis of `data` (agreement.data's loaded records), or
    None for an axis that is no split check: the boundaries' accuracy, or the entries'
    accuracy with the binary kappa beside the axis's own `report`."""
    if RIGHT_SPLIT in data.labels.codes[axis]:
        gold_sets, per_annotator, judges = _split_sets(data, axis)
        return accuracy(gold_sets, per_annotator, judges=judges)
    if axis == ENTRY_AXIS and CORRECT in data.labels.codes[axis]:
        gold_sets, per_annotator, judges = _split_sets(data, axis)
        return {
            **entry_accuracy(gold_sets, per_annotator, judges=judges),
            "binary": binary_kappa(_correct_report(data, axis, n_boot, seed), report),
        }
    return None


def _split_sets(data, axis: str) -> tuple[list[frozenset], dict, set[str]]:
    """A split-check axis: (the study-level gold's label sets, {annotator: label sets},
    the judges) for its accuracy (agreement/splitcheck.py), from the same records."""
    sets = data.labels.sets(data.masks[axis], axis)
    names = np.array(data.annotators, dtype=object)[data.annotator]
    per_annotator: dict[str, list[frozenset]] = {}
    for who, labels in zip(names.tolist(), sets.tolist(), strict=True):
        per_annotator.setdefault(who, []).append(labels)
    judges = set(names[data.judge].tolist())
    gold = data.labels.sets(data.gold[axis].mask, axis)
    return gold.tolist(), per_annotator, judges


def _correct_report(data, axis: str, n_boot: int, seed: int) -> dict:
    """The report (pairs, groups, their kappas and intervals) of the voting records reduced
    to the binary judgement: `correct` given, or not."""
    rows = ~data.judge
    bit = np.uint64(data.labels.codes[axis].index(CORRECT))
    mask = (data.masks[axis][rows] >> bit) & np.uint64(1)
    binary = encode_axes(
        {CORRECT: [CORRECT]},
        data.card[rows],
        data.annotator[rows],
        data.annotators,
        data.group[rows],
        data.groups,
        {CORRECT: mask},
        ids=data.annotator_ids,
    )[CORRECT]
    return report_from_encoded(binary, n_boot=n_boot, seed=seed)


# -- the report's tables ----------------------------------------------------------------------


def split_check_tables(check: Mapping | None) -> list[Table]:
    """The tables of an axis's `split_check` (none for any other axis)."""
    if not check:
        return []
    if check.get("unit") == "entries":
        return [entry_accuracy_table(check), binary_kappa_table(check.get("binary", {}))]
    return [split_check_table(check)]


def _who_rows(check: Mapping, columns: tuple[Column, ...]) -> list[Row]:
    """The consensus's row, then one per annotator (a judge marked)."""
    rows = [Row(cells(check.get("consensus", {}), columns, who=Cell("Consensus")),
                name="consensus", text="Consensus", css="overall")]  # fmt: skip
    for who, r in check.get("annotators", {}).items():
        shown = f"{who} (judge)" if r.get("judge") else who
        rows.append(Row(cells(r, columns, who=Cell(shown)), name=who, text=shown))
    return rows


SPLIT_CHECK = (
    Column("who", "Labels of", "text"),
    Column("n_cards", "Split points", "count", text="{} split points"),
    Column("n_right", "Right split", "count", text="{} right"),
    Column("accuracy", "Accuracy", "share", text="accuracy {}"),
)


def split_check_table(check: Mapping) -> Table:
    """A split check over boundaries: the share of checked split points labelled "Right
    split", for the consensus (the study-level gold) and for each annotator."""
    intro = (
        "Accuracy: the share of the checked split points whose label is "
        f"`{check.get('right', RIGHT_SPLIT)}` (Right split); any other label, or none, "
        "counts as not right."
    )
    return Table("split-check", "Split check: accuracy", "split_check", SPLIT_CHECK,
                 tuple(_who_rows(check, SPLIT_CHECK)), outputs=EVERYWHERE, intro=intro)  # fmt: skip


ENTRY_ACCURACY = (
    Column("who", "Labels of", "text"),
    Column("n_cards", "Entries", "count", text="{} entries"),
    Column("n_correct", "Correct", "count", text="{} correct"),
    Column("entry_accuracy", "Entry accuracy", "share", text="entry accuracy {}"),
    Column("entry_accuracy_ci", "95% CI (Wilson)", "ci", tex="95\\% CI (Wilson)",
           text="95% CI {}"),
)  # fmt: skip


def entry_accuracy_table(check: Mapping) -> Table:
    """A split check over entries: the entry accuracy with its Wilson interval, for the
    consensus and for each annotator."""
    intro = (
        "Entry accuracy: the share of the checked entries whose label is "
        f"`{check.get('correct', CORRECT)}` (one self-contained topic); any other label, or "
        "none, counts as incorrect. The interval is Wilson's 95% score interval."
    )
    return Table("split-check-entries", "Split check: entry accuracy", "split_check",
                 ENTRY_ACCURACY, tuple(_who_rows(check, ENTRY_ACCURACY)), outputs=EVERYWHERE,
                 intro=intro)  # fmt: skip


BINARY_KAPPA = (
    Column("who", "Pairs of", "text"),
    Column("n_common_cards", "Common cards", "count", text="{} common cards", optional=True),
    Column("cohen_kappa", "κ correct / incorrect", tex="$\\kappa$ correct / incorrect",
           text="kappa correct/incorrect {}"),
    Column("cohen_kappa_ci", "95% CI", "ci", tex="95\\% CI", text="95% CI {}"),
    Column("percent_agreement", "Agreement (correct / incorrect)", "share",
           text="agreement {}"),
    Column("cohen_kappa_full", "κ (every reason)", tex="$\\kappa$ (every reason)",
           text="full kappa {}"),
)  # fmt: skip


def binary_kappa_table(binary: Mapping) -> Table:
    """Cohen's kappa on correct / incorrect beside the full one: per group, over all pairs,
    and per pair."""
    rows = [
        Row(cells(section, BINARY_KAPPA, who=Cell(f"Group {name}")), name=name,
            text=f"Group {name}")
        for name, section in binary.get("groups", {}).items()
    ]  # fmt: skip
    rows.append(Row(cells(binary.get("group_mean", {}), BINARY_KAPPA, who=Cell("All pairs")),
                    name="all pairs", text="All pairs", css="overall"))  # fmt: skip
    rows += [
        Row(cells(pair, BINARY_KAPPA, who=Cell(pair_label(key, pair, " · "))),
            name=pair_label(key, pair), text=pair_label(key, pair))
        for key, pair in binary.get("pairs", {}).items()
    ]  # fmt: skip
    note = (
        "κ correct / incorrect: Cohen's kappa on the binary judgement (`correct`, or any "
        "other label or none); κ (every reason): the axis's kappa, each reason apart. Group "
        'and "All pairs" rows are unweighted means over their pairs; intervals are bootstrap '
        "95% percentile intervals over cards."
    )
    return Table("split-check-kappa", "Split check: kappa, correct / incorrect",
                 "split_check_kappa", BINARY_KAPPA, tuple(rows), outputs=EVERYWHERE,
                 note=note)  # fmt: skip
