"""The tables of each annotator (an LLM judge's too) against the consensus: the exact set,
kappa and mean F1 with their intervals (versus.py: bootstrap resampling conversations), and
per type precision, recall, F1 and kappa."""

from __future__ import annotations

from collections.abc import Mapping

from .spec import (
    COUNT,
    EVERYWHERE,
    KAPPA,
    Cell,
    Column,
    Row,
    Table,
    cells,
    folded,
    type_rows,
    value_of,
)


def _ci(of: str) -> Column:
    """The interval column right after its measure `of` (the CSV puts the interval in that
    measure's ci_low and ci_high); left out where no row has one (n_boot=0, a result
    computed before the judge's measures had intervals)."""
    return Column(f"{of}_ci", "95% CI", "ci", tex="95\\% CI", text="95% CI {}", optional=True)


VERSUS = (
    Column("annotator", "Annotator", "text"),
    Column("n_cards", "Cards", COUNT, text="{} cards"),
    Column("n_conversations", "Conversations", COUNT, optional=True, text="{} conversations"),
    Column("accuracy", "Exact set", text="exact set {}"),
    _ci("accuracy"),
    KAPPA,
    _ci("cohen_kappa"),
    Column("macro_f1", "Mean F1 over types", text="mean F1 over types {}"),
    _ci("macro_f1"),
)


def macro_f1(r: Mapping) -> Cell:
    """The stored mean of the defined per-type F1s; computed here for a result stored
    before the job stored it."""
    if "macro_f1" in r:
        return value_of(r, "macro_f1")
    f1 = [v for v in (r.get("f1") or {}).values() if v is not None]
    if not f1:
        return Cell(None, "undefined: no type has a defined F1")
    return Cell(sum(f1) / len(f1))


def versus_table(versus: Mapping) -> Table:
    rows = tuple(
        Row(cells(r, VERSUS, annotator=Cell(who), macro_f1=macro_f1(r)), name=who, text=who)
        for who, r in versus.items()
    )
    note = (
        "The consensus is the truth here. Intervals: bootstrap 95% percentile intervals "
        "resampling conversations (all cards of a drawn conversation together), with the "
        "job's resamples and seed. Import an LLM judge's labels with "
        "`import_annotations SLUG FILE --judge --create-members`: a judge is compared with "
        "the gold labels here but never votes in the rounds."
    )
    return Table(
        "versus",
        "Each annotator against the consensus",
        "versus",
        VERSUS,
        rows,
        outputs=EVERYWHERE,
        note=note,
    )


TYPE_SCORES = (  # the per-type scores with their intervals (also the judges' per-type table)
    Column("precision", "Precision"),
    _ci("precision"),
    Column("recall", "Recall"),
    _ci("recall"),
    Column("f1", "F1"),
    _ci("f1"),
    Column("per_label_kappa", "κ", tex="$\\kappa$"),
    _ci("per_label_kappa"),
)
VERSUS_TYPES = (Column("type", "Type", "text"), *TYPE_SCORES)


def versus_types_table(who: str, r: Mapping, codes, names) -> Table:
    title = f"{who}: precision, recall, F1 and κ per type"
    rows = type_rows(r, VERSUS_TYPES, codes, names, "f1", name=who)
    return folded("versus-per-type", title, "versus", VERSUS_TYPES, rows)
