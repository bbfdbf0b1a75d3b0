"""The agreement report's tables, shaped once and written as Markdown, LaTeX or CSV.

`result` is the result of a done agreement Job (annotation.agreement.data):
{"study", "round", "axes": {axis: {"report": agreement report, "extras": build_extras(...)}}}.
`taxonomy` is {axis: [TaxonomyEntry]} in the taxonomy's order (the page reads it from the
database, since the result holds type codes only).

Markdown and LaTeX print numbers with 3 decimals and shares as percentages with 2 (as the
study prints its taxonomy table); a null prints as "—" (Markdown) or "--" (LaTeX).

CSV is the long format, one row per number, full precision, columns:
    axis, scope, name, statistic, label, value, ci_low, ci_high, reason
- scope "axis": name empty; statistic n_cards, n_annotators, n_annotations,
  n_pairable_cards, percent_agreement_all, mean_pairwise_percent_agreement,
  krippendorff_alpha_nominal, krippendorff_alpha_masi, fleiss_kappa,
  fleiss_kappa_complete_cards, n_complete_cards; per label (label set):
  krippendorff_alpha_nominal_per_label, fleiss_kappa_per_label, prevalence.
- scope "overall" (name "all pairs") and "group" (name = group): the group means
  cohen_kappa (with ci_low/ci_high for groups), percent_agreement, per_label_kappa_macro,
  per_label_kappa_micro.
- scope "pair" (name "a|b"): n_common_cards, percent_agreement, cohen_kappa (with CI), pabak,
  per_label_kappa_macro, per_label_kappa_micro, and per label per_label_kappa,
  per_label_pabak, per_label_ac1.
- scope "taxonomy": the denominators n_cards (consensus cards) and n_instances (consensus
  label instances) with name and label empty; per type (name = category, label = type
  code): count (consensus cards carrying it), share_of_cards (count / n_cards) and share
  (count / n_instances); and name "no smell" (label empty): count and share_of_cards of the
  consensus cards with the empty set, share null (not a label instance).
An empty value is a null; `reason` then says why.

The taxonomy table (page, Markdown, LaTeX) has one row per type and a "No smell (empty
set)" row, and names each share's denominator in its header: "Share of consensus cards
(n = ...)" and "Share of label instances (n = ...)" (the latter is the study's paper's).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NULL_MD = "—"
NULL_TEX = "--"


@dataclass(frozen=True)
class TaxonomyEntry:
    code: str
    name: str
    category: str


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


# -- shaping ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A number of the report and, when it is null, why."""

    value: float | int | None
    reason: str = ""

    @property
    def shown(self) -> str:
        return fmt(self.value)

    @property
    def percent(self) -> str:
        return fmt_share(self.value)


def value_of(section: Mapping, key: str) -> Value:
    return Value(section.get(key), section.get(f"{key}_reason") or "")


@dataclass(frozen=True)
class KappaRow:
    name: str
    n_pairs: int
    cohen_kappa: Value
    ci: Sequence[float] | None
    ci_reason: str
    percent_agreement: Value
    per_label_kappa_macro: Value
    per_label_kappa_micro: Value


def kappa_rows(report: Mapping, extras: Mapping) -> list[KappaRow]:
    """One row per group, then "All pairs" (the report's group_mean)."""
    by_group = extras.get("pairs_by_group", {})
    rows = []
    for name, section in report.get("groups", {}).items():
        rows.append(_kappa_row(name, len(by_group.get(name, [])), section))
    overall = _kappa_row("All pairs", len(report.get("pairs", {})), report.get("group_mean", {}))
    rows.append(overall)
    return rows


def _kappa_row(name: str, n_pairs: int, section: Mapping) -> KappaRow:
    ci = section.get("cohen_kappa_ci")
    ci_reason = section.get("cohen_kappa_ci_reason", "")
    return KappaRow(
        name=name,
        n_pairs=n_pairs,
        cohen_kappa=value_of(section, "cohen_kappa"),
        ci=ci,
        ci_reason=ci_reason,
        percent_agreement=value_of(section, "percent_agreement"),
        per_label_kappa_macro=value_of(section, "per_label_kappa_macro"),
        per_label_kappa_micro=value_of(section, "per_label_kappa_micro"),
    )


@dataclass(frozen=True)
class TaxonomyRow:
    category: str
    code: str
    name: str
    count: int
    share: Value
    share_of_cards: Value


NO_SMELL = "No smell (empty set)"
NOT_COUNTED = Value(None, "not counted")


@dataclass(frozen=True)
class TaxonomyTable:
    rows: list[TaxonomyRow]
    # None for a result computed before the empty set was counted: no row, not a wrong 0
    no_smell: TaxonomyRow | None
    n_cards: int | None
    n_instances: int | None

    @property
    def all_rows(self) -> list[TaxonomyRow]:
        return self.rows + ([self.no_smell] if self.no_smell is not None else [])

    def header(self, n: str = "n = {}") -> list[str]:
        """The column titles, each share with its denominator (`n` formats the count)."""
        return [
            "Category",
            "Type",
            "Consensus cards",
            f"Share of consensus cards ({n.format(fmt(self.n_cards))})",
            f"Share of label instances ({n.format(fmt(self.n_instances))})",
        ]


def taxonomy_table(extras: Mapping, entries: Sequence[TaxonomyEntry]) -> TaxonomyTable:
    counted = extras.get("taxonomy_table", {})
    no_smell = counted.get("no_smell")
    return TaxonomyTable(
        rows=taxonomy_rows(extras, entries),
        no_smell=None if no_smell is None else _taxonomy_row("", "", NO_SMELL, no_smell),
        n_cards=counted.get("n_cards"),
        n_instances=counted.get("n_instances"),
    )


def _taxonomy_row(category: str, code: str, name: str, row: Mapping) -> TaxonomyRow:
    return TaxonomyRow(
        category=category,
        code=code,
        name=name,
        count=int(row.get("count", 0)),
        share=value_of(row, "share") if "share" in row else NOT_COUNTED,
        share_of_cards=value_of(row, "share_of_cards") if "share_of_cards" in row else NOT_COUNTED,
    )


def taxonomy_rows(extras: Mapping, entries: Sequence[TaxonomyEntry]) -> list[TaxonomyRow]:
    """The study's taxonomy table in the taxonomy's order; a code the taxonomy no longer
    has (an older version's) comes last under its code."""
    counted = {row["code"]: row for row in extras.get("taxonomy_table", {}).get("rows", [])}
    known = {e.code for e in entries}
    ordered = list(entries) + [
        TaxonomyEntry(code, code, NULL_MD) for code in counted if code not in known
    ]
    return [
        _taxonomy_row(e.category, e.code, e.name, counted.get(e.code, {"count": 0}))
        for e in ordered
    ]


def _axes(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]):
    for axis, data in result.get("axes", {}).items():
        yield axis, data["report"], data.get("extras", {}), taxonomy.get(axis, [])


def _title(result: Mapping) -> str:
    return f"Agreement: {result.get('study', '')}, round {result.get('round', 1)}"


# -- Markdown -----------------------------------------------------------------------------


def _md_cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str) -> list[str]:
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


KAPPA_HEADER = [
    "Group",
    "Pairs",
    "Cohen's κ",
    "95% CI",
    "Percent agreement",
    "Per-label κ (macro)",
    "Per-label κ (micro)",
]


def to_markdown(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    lines = [f"# {_md_cell(_title(result))}", ""]
    for axis, report, extras, entries in _axes(result, taxonomy):
        lines += [f"## Axis `{axis}`", "", "### Cohen's kappa per group", ""]
        rows = [
            [
                r.name,
                r.n_pairs,
                fmt(r.cohen_kappa.value),
                fmt_ci(r.ci),
                fmt(r.percent_agreement.value),
                fmt(r.per_label_kappa_macro.value),
                fmt(r.per_label_kappa_micro.value),
            ]
            for r in kappa_rows(report, extras)
        ]
        lines += _md_table(KAPPA_HEADER, rows, "lrrrrrr")
        lines += ["", "### Taxonomy", ""]
        table = taxonomy_table(extras, entries)
        rows = [
            [
                t.category,
                t.name,
                t.count,
                fmt_share(t.share_of_cards.value),
                fmt_share(t.share.value),
            ]
            for t in table.all_rows
        ]
        lines += _md_table(table.header(), rows, "llrrr")
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
}


def tex_escape(text: object) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def _tex_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """`header` is already LaTeX; `rows` are already escaped."""
    return [
        f"\\begin{{tabular}}{{{align}}}",
        "\\hline",
        " & ".join(header) + " \\\\",
        "\\hline",
        *(" & ".join(row) + " \\\\" for row in rows),
        "\\hline",
        "\\end{tabular}",
    ]


def to_latex(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    lines = [f"% {tex_escape(_title(result))}", ""]
    for axis, report, extras, entries in _axes(result, taxonomy):
        lines.append(f"% axis {tex_escape(axis)}: Cohen's kappa per group")
        header = [
            "Group",
            "Pairs",
            "Cohen's $\\kappa$",
            "95\\% CI",
            "Percent agreement",
            "Per-label $\\kappa$ (macro)",
            "Per-label $\\kappa$ (micro)",
        ]
        rows = [
            [
                tex_escape(r.name),
                str(r.n_pairs),
                fmt(r.cohen_kappa.value, NULL_TEX),
                fmt_ci(r.ci, NULL_TEX),
                fmt(r.percent_agreement.value, NULL_TEX),
                fmt(r.per_label_kappa_macro.value, NULL_TEX),
                fmt(r.per_label_kappa_micro.value, NULL_TEX),
            ]
            for r in kappa_rows(report, extras)
        ]
        lines += _tex_table(header, rows, "lrrrrrr")
        lines += ["", f"% axis {tex_escape(axis)}: taxonomy"]
        table = taxonomy_table(extras, entries)
        rows = [
            [
                tex_escape(t.category),
                tex_escape(t.name),
                str(t.count),
                fmt_share(t.share_of_cards.value, NULL_TEX, "\\%"),
                fmt_share(t.share.value, NULL_TEX, "\\%"),
            ]
            for t in table.all_rows
        ]
        lines += _tex_table(table.header("$n = {}$"), rows, "llrrr")
        lines.append("")
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
_AXIS_KEYS = (
    "n_cards",
    "n_annotators",
    "n_annotations",
    "n_pairable_cards",
    "percent_agreement_all",
    "mean_pairwise_percent_agreement",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_masi",
    "fleiss_kappa",
    "fleiss_kappa_complete_cards",
    "n_complete_cards",
)
_AXIS_LABEL_KEYS = ("krippendorff_alpha_nominal_per_label", "fleiss_kappa_per_label", "prevalence")
_MEAN_KEYS = ("cohen_kappa", "percent_agreement", "per_label_kappa_macro", "per_label_kappa_micro")
_PAIR_KEYS = (
    "n_common_cards",
    "percent_agreement",
    "cohen_kappa",
    "pabak",
    "per_label_kappa_macro",
    "per_label_kappa_micro",
)
_PAIR_LABEL_KEYS = ("per_label_kappa", "per_label_pabak", "per_label_ac1")


def _csv_value(value) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def to_csv(result: Mapping, taxonomy: Mapping[str, Sequence[TaxonomyEntry]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)

    def put(axis, scope, name, section: Mapping, key: str) -> None:
        # only Cohen's kappa has an interval, next to it as `cohen_kappa_ci`
        ci = section.get(f"{key}_ci")
        w.writerow(
            [
                axis,
                scope,
                name,
                key,
                "",
                _csv_value(section.get(key)),
                _csv_value(ci[0]) if ci else "",
                _csv_value(ci[1]) if ci else "",
                section.get(f"{key}_reason", "") if section.get(key) is None else "",
            ]
        )

    def put_labels(axis, scope, name, section: Mapping, key: str) -> None:
        reasons = section.get(f"{key}_reason", {}) or {}
        for label, value in (section.get(key) or {}).items():
            reason = reasons.get(label, "") if value is None else ""
            w.writerow([axis, scope, name, key, label, _csv_value(value), "", "", reason])

    for axis, report, extras, entries in _axes(result, taxonomy):
        for key in _AXIS_KEYS:
            put(axis, "axis", "", report, key)
        for key in _AXIS_LABEL_KEYS:
            put_labels(axis, "axis", "", report, key)
        for key in _MEAN_KEYS:
            put(axis, "overall", "all pairs", report.get("group_mean", {}), key)
        for name, section in report.get("groups", {}).items():
            for key in _MEAN_KEYS:
                put(axis, "group", name, section, key)
        for name, section in report.get("pairs", {}).items():
            for key in _PAIR_KEYS:
                put(axis, "pair", name, section, key)
            for key in _PAIR_LABEL_KEYS:
                put_labels(axis, "pair", name, section, key)
        table = taxonomy_table(extras, entries)
        counted = extras.get("taxonomy_table", {})
        for key in ("n_cards", "n_instances"):
            if key in counted:
                put(axis, "taxonomy", "", counted, key)
        for t in table.all_rows:
            name = t.category if t is not table.no_smell else "no smell"
            for key, v in (
                ("count", Value(t.count)),
                ("share", t.share),
                ("share_of_cards", t.share_of_cards),
            ):
                w.writerow(
                    [axis, "taxonomy", name, key, t.code, _csv_value(v.value), "", "",
                     v.reason if v.value is None else ""]
                )  # fmt: skip
    return buf.getvalue()
