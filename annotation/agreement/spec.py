"""The agreement report's tables as one spec, computed once from a done job's result.

    tables.report_spec(result, taxonomy) -> [AxisSpec(code, name, tables)]

Every output renders this spec (render.py: CSV, Markdown, LaTeX and the `agreement`
command's summary; views/report.py and templates/annotation/report/: the page), so each
shows the same numbers, formatted by the same functions. A Table has its columns (the
statistic, its header, how a value is formatted: `kind`) and its rows of Cells (the value
as stored and, when it is null, why). Numbers the result does not store are computed here
from it, once: the per-type summary of the pairs' kappas (mean, lowest, highest) and each
annotator's macro F1 against the consensus. `Table.outputs` says which outputs carry a
table (LaTeX: the paper's tables; the command: the summaries, not the per-pair details).

`result` is the result of a done agreement Job (annotation.agreement.data); `taxonomy` is
{axis: [TaxonomyEntry]} in the taxonomy's order (the result holds type codes only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PAGE, CSV, MD, TEX, TEXT = "page", "csv", "md", "tex", "text"
EVERYWHERE = frozenset({PAGE, CSV, MD, TEX, TEXT})
NOT_TEX = EVERYWHERE - {TEX}
DETAILS = frozenset({PAGE, CSV, MD})

NULL_MD = "—"
NO_SMELL = "No smell (empty set)"


@dataclass(frozen=True)
class TaxonomyEntry:
    code: str
    name: str
    category: str


def taxonomy_entries(version) -> tuple[dict[str, list[TaxonomyEntry]], dict[str, str]]:
    """({axis code: entries in the taxonomy's order}, {axis code: axis name}) of a
    TaxonomyVersion."""
    entries: dict[str, list[TaxonomyEntry]] = {}
    axis_names: dict[str, str] = {}
    for t in version.type_list():
        axis_names[t.axis.code] = t.axis.name
        entries.setdefault(t.axis.code, []).append(TaxonomyEntry(t.code, t.name, t.category.name))
    return entries, axis_names


# -- formatting: one function per kind, for every output ----------------------------------


def fmt(value: float | int | None, null: str = NULL_MD) -> str:
    if value is None:
        return null
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"{value:.3f}"


def fmt_share(value: float | None, null: str = NULL_MD, percent: str = "%") -> str:
    return null if value is None else f"{100 * value:.2f}{percent}"


def fmt_ci(ci: Sequence[float] | None, null: str = NULL_MD) -> str:
    return null if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def show(kind: str, value, null: str = NULL_MD, percent: str = "%") -> str:
    """A value of a column of `kind` as every output prints it."""
    if kind == "text":
        return "" if value is None else str(value)
    if kind == "share":
        return fmt_share(value, null, percent)
    if kind == "ci":
        return fmt_ci(value, null)
    return fmt(value, null)


# -- the spec -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str  # the statistic (CSV) or, for a text column, what it names
    header: str  # the page's and Markdown's
    kind: str = "number"  # text | count | number | share | ci
    tex: str = ""  # the LaTeX header, when not the escaped header
    text: str = ""  # the command's "kappa {}"; empty: not in the command's summary
    n: str = ""  # a total of the table the header states: "(n = 6)"
    optional: bool = False  # left out where every value is null (the CSV keeps it)
    repeat: bool = True  # False: the page shows a value only where it changes


@dataclass(frozen=True)
class Cell:
    value: object = None
    reason: str = ""

    @property
    def null(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    name: str = ""  # CSV name (a group, a pair "a|b", an annotator, a category)
    label: str = ""  # CSV label (a type code)
    scope: str = ""  # CSV scope, when not the table's
    text: str = ""  # the command's row title
    css: str = ""  # the page's row class
    # more numbers of the row in the CSV only, {statistic: Cell} (a team's lowest and
    # highest group kappa, which the other outputs print in the row's title)
    extra: Mapping[str, Cell] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    scope: str  # CSV scope
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    outputs: frozenset[str] = NOT_TEX
    totals: Mapping[str, Cell] = field(default_factory=dict)  # denominators, in the CSV
    record: bool = False  # one row, shown as label: value pairs
    heading: bool = True  # False: shown under the previous table's heading
    summary: str = ""  # the page folds the table under this summary
    intro: str = ""  # page prose before the table; `code` in backticks
    note: str = ""  # page prose after it
    empty: str = ""  # shown when there is no row; without it, no row: no table

    def shown(self) -> list[int]:
        """The indexes of the columns a reader sees: an optional column of nulls only is
        left out."""
        return [
            i
            for i, c in enumerate(self.columns)
            if not c.optional or any(not r.cells[i].null for r in self.rows)
        ]

    def header(self, i: int, n: str = "n = {}") -> str:
        c = self.columns[i]
        if not c.n:
            return c.header
        total = self.totals.get(c.n, Cell())
        return f"{c.header} ({n.format(fmt(total.value))})"


@dataclass(frozen=True)
class AxisSpec:
    code: str
    name: str
    tables: list[Table]


def value_of(section: Mapping, key: str) -> Cell:
    return Cell(section.get(key), section.get(f"{key}_reason") or "")


def label_cell(section: Mapping, key: str, code: str) -> Cell:
    return Cell(
        (section.get(key) or {}).get(code), (section.get(f"{key}_reason") or {}).get(code, "")
    )


def pair_names(key: str, pair: Mapping) -> tuple[str, str]:
    """The names of a pair's two annotators (or groups): its entry's `a` and `b` (a study's
    report keys pairs by ids), else its key "a|b" of names (a result stored before that)."""
    if isinstance(pair.get("a"), Mapping) and isinstance(pair.get("b"), Mapping):
        return str(pair["a"].get("name")), str(pair["b"].get("name"))
    a, _, b = key.partition("|")
    return a, b


def pair_label(key: str, pair: Mapping, sep: str = "|") -> str:
    """A pair as its names say it: "alice|bob" (a row's CSV name), "alice · bob" (shown)."""
    return sep.join(pair_names(key, pair))


# -- building tables: what every table module uses

COUNT = "count"
KAPPA = Column("cohen_kappa", "Cohen's κ", tex="Cohen's $\\kappa$", text="kappa {}")


def cells(section: Mapping, columns: Sequence[Column], **given: Cell) -> tuple[Cell, ...]:
    return tuple(given[c.name] if c.name in given else value_of(section, c.name) for c in columns)


def type_rows(section: Mapping, columns, codes, names, present: str, name: str = "") -> tuple:
    return tuple(
        Row(
            tuple(
                Cell(names.get(code, code))
                if c.kind == "text"
                else label_cell(section, c.name, code)
                for c in columns
            ),
            name=name,
            label=code,
            text=code,
        )
        for code in codes
        if code in (section.get(present) or {})
    )


def folded(table_id: str, title: str, scope: str, columns, rows) -> Table:
    """A per-type detail table: folded under its title on the page, in every download."""
    return Table(
        table_id, title, scope, columns, rows, outputs=DETAILS, heading=False, summary=title
    )
