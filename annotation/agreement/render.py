"""The agreement report's tables written as Markdown, LaTeX, CSV or the `agreement`
command's plain-text summary, each from the one spec (spec.py), so every output shows the
same numbers; the page renders the same spec (views/report.py).

Markdown and LaTeX print numbers with 3 decimals and shares as percentages with 2 (as the
study prints its taxonomy table); a null prints as "—" (Markdown, the page), "--" (LaTeX)
or "undefined" / "n/a" (the command). Markdown escapes what would be HTML or a link in a
name (`<`, `>`, `[`, `]`), and the `|` of a table; LaTeX escapes its special characters.
LaTeX carries the paper's tables (kappa per group, each annotator against the consensus,
the taxonomy); Markdown and CSV every table; the command the summaries (no per-pair or
per-annotator per-type detail).

CSV is the long format, one row per number, full precision, columns:
    axis, scope, name, statistic, label, value, ci_low, ci_high, reason
one row per cell of every table but its text columns: `scope` is the table's (or the
row's: "overall" for "all pairs"), `name` the row's group, pair "a|b" (the two names),
annotator or category ("no smell" for the empty set), `label` the type code of a per-type row, and
Cohen's kappa carries its interval in ci_low/ci_high. The scopes: "axis" (the summary and
the per-type table: prevalence, alpha and Fleiss per label, and over the pairs
pair_kappa_mean / _min / _max and n_pairs_defined), "group" and "overall", "pair" (the
pairs and each pair's per-type kappa, PABAK, AC1), "team" and "phase" (a team's or a
phase's row of the kappa table: `name` the kind or the phase, the means of its groups'
values under the columns' statistics, and its lowest, highest, n_groups and n_defined),
"between_groups", "versus" (each
annotator against the consensus, with macro_f1, and per type precision, recall, f1,
per_label_kappa) and "taxonomy". A table's denominators (n_cards and n_instances of the
taxonomy, n_complete_cards, n_pairs) are rows with an empty name and label. An empty value
is a null; `reason` then says why.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from ..csv_cells import SafeWriter
from .episode_tables import EPISODES
from .spec import (
    CSV,
    MD,
    NULL_MD,
    TEX,
    TEXT,
    AxisSpec,
    Table,
    TaxonomyEntry,
    fmt,
    fmt_ci,
    fmt_share,
    show,
)
from .tables import report_spec

__all__ = [
    "NULL_MD",
    "NULL_TEX",
    "TaxonomyEntry",
    "fmt",
    "fmt_ci",
    "fmt_share",
    "tex_escape",
    "to_csv",
    "to_latex",
    "to_markdown",
    "to_text",
]

NULL_TEX = "--"


def _title(result: Mapping) -> str:
    title = f"Agreement: {result.get('study', '')}, round {result.get('round', 1)}"
    if result.get("taxonomy_version"):
        title += f", taxonomy {result['taxonomy_version']}"
    return title


def _spec(result, taxonomy) -> list[AxisSpec]:
    return report_spec(result, taxonomy)


def _tables(axis: AxisSpec, output: str):
    for table in axis.tables:
        if output in table.outputs and table.rows:
            yield table


def cells(table: Table, null: str = NULL_MD, percent: str = "%", escape=str) -> list[list[str]]:
    """The table's shown cells as text: text columns through `escape`, numbers formatted."""
    shown = table.shown()
    return [
        [
            escape(show("text", row.cells[i].value))
            if table.columns[i].kind == "text"
            else show(table.columns[i].kind, row.cells[i].value, null, percent)
            for i in shown
        ]
        for row in table.rows
    ]


def _align(table: Table) -> str:
    return "".join("l" if table.columns[i].kind == "text" else "r" for i in table.shown())


# -- Markdown -----------------------------------------------------------------------------

_MD = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "\n": " "}


def md_escape(text: object) -> str:
    """A name in Markdown: no HTML tag, link or table cell boundary can come from it."""
    return "".join(_MD.get(ch, ch) for ch in str(text))


def to_markdown(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    lines = [f"# {md_escape(_title(result))}", ""]
    for axis in _spec(result, taxonomy):
        heading = "Episodes" if axis.code == EPISODES else f"Axis {md_escape(axis.code)}"
        lines += [f"## {heading}", ""]
        for table in _tables(axis, MD):
            header = [md_escape(table.header(i)) for i in table.shown()]
            sep = ["---" if a == "l" else "---:" for a in _align(table)]
            lines += [f"### {md_escape(table.title)}", ""]
            lines += ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
            lines += ["| " + " | ".join(r) + " |" for r in cells(table, escape=md_escape)]
            lines.append("")
    return "\n".join(lines)


# -- LaTeX --------------------------------------------------------------------------------

_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "–": "--",  # a team's range of kappas, "0.542–0.712"
}


def tex_escape(text: object) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def _tex_header(table: Table, i: int) -> str:
    column = table.columns[i]
    head = column.tex or tex_escape(column.header)
    if column.n:
        total = table.totals.get(column.n)
        head += f" ($n = {fmt(total.value if total else None, NULL_TEX)}$)"
    return head


def to_latex(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    lines = [f"% {tex_escape(_title(result))}", ""]
    for axis in _spec(result, taxonomy):
        for table in _tables(axis, TEX):
            lines.append(f"% axis {tex_escape(axis.code)}: {tex_escape(table.title)}")
            lines += [
                f"\\begin{{tabular}}{{{_align(table)}}}",
                "\\hline",
                " & ".join(_tex_header(table, i) for i in table.shown()) + " \\\\",
                "\\hline",
                *(
                    " & ".join(r) + " \\\\"
                    for r in cells(table, NULL_TEX, "\\%", escape=tex_escape)
                ),
                "\\hline",
                "\\end{tabular}",
                "",
            ]
    return "\n".join(lines)


# -- CSV ----------------------------------------------------------------------------------

CSV_COLUMNS = [
    "axis",
    "scope",
    "name",
    "statistic",
    "label",
    "value",
    "ci_low",
    "ci_high",
    "reason",
]


def _csv_value(value) -> object:
    """A number stays a number (written in full precision: a kappa of -0.25 is data, and its
    column stays numeric), None is an empty cell; text is neutralised by the writer."""
    return "" if value is None else value


def to_csv(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    """Every cell through csv_cells.SafeWriter: a group, pair, annotator or category name
    that begins like a formula gets a leading apostrophe; computed numbers are unchanged."""
    buf = io.StringIO()
    w = SafeWriter(csv.writer(buf, lineterminator="\n"))
    w.writerow(CSV_COLUMNS)
    if result.get("taxonomy_version"):
        # the file names the taxonomy version its numbers are of (annotation/evolution/)
        w.writerow(["", "report", "", "taxonomy_version", "", result["taxonomy_version"],
                    "", "", ""])  # fmt: skip
    for axis in _spec(result, taxonomy):
        for table in _tables(axis, CSV):
            for key, cell in table.totals.items():
                w.writerow([axis.code, table.scope, "", key, "", _csv_value(cell.value), "", "",
                            cell.reason if cell.null else ""])  # fmt: skip
            for row in table.rows:
                by_name = dict(zip((c.name for c in table.columns), row.cells, strict=True))
                for column, cell in zip(table.columns, row.cells, strict=True):
                    if column.kind in ("text", "ci"):
                        continue  # a name, or the interval beside its kappa
                    ci = by_name.get(f"{column.name}_ci")
                    ci = ci.value if ci is not None else None
                    w.writerow(
                        [axis.code, row.scope or table.scope, row.name, column.name, row.label,
                         _csv_value(cell.value),
                         _csv_value(ci[0]) if ci else "", _csv_value(ci[1]) if ci else "",
                         cell.reason if cell.null else ""]
                    )  # fmt: skip
                for statistic, cell in row.extra.items():
                    w.writerow([axis.code, row.scope or table.scope, row.name, statistic,
                                row.label, _csv_value(cell.value), "", "",
                                cell.reason if cell.null else ""])  # fmt: skip
    return buf.getvalue()


# -- the `agreement` command's summary ----------------------------------------------------


def _text_value(kind: str, cell) -> str:
    if cell.null:
        return "n/a" if cell.reason.startswith("not applicable") else "undefined"
    return show(kind, cell.value)


def _text_cells(table: Table, row) -> str:
    return ", ".join(
        table.columns[i].text.format(_text_value(table.columns[i].kind, row.cells[i]))
        for i in table.shown()
        if table.columns[i].text
    )


def to_text(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    lines = [
        f"Study {result.get('study', '')}, round {result.get('round', 1)}, taxonomy "
        f"{result.get('taxonomy_version', '')} (computed {result.get('computed_at', '')})"
    ]
    for axis in _spec(result, taxonomy):
        lines.append("")
        for table in _tables(axis, TEXT):
            if table.record:
                lines.append(f"{table.rows[0].text}: {_text_cells(table, table.rows[0])}")
                continue
            lines.append(f"  {table.title}:")
            lines += [f"    {row.text}: {_text_cells(table, row)}" for row in table.rows]
    return "\n".join(lines)
