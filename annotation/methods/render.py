"""The methods section (annotation/methods, its JSON) as Markdown and LaTeX, and the cells as
the report page's Methods tab shows them. Only the presentation: every number is the data's.

Text from the study (names of groups, people, files, the sample's paragraph) is escaped in
each: Markdown escapes HTML, links and table pipes (agreement/render.md_escape), LaTeX its
special characters (tex_escape), and the few non-ASCII signs the section writes (κ, ±, ², −,
≥) become LaTeX that pdflatex reads without packages. Each step's table is a booktabs table
(\\toprule, \\midrule, \\bottomrule: the preamble needs \\usepackage{booktabs})."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..agreement.render import md_escape as _md_escape
from ..agreement.render import tex_escape as _tex_escape

NULL_MD = "—"
NULL_TEX = "--"
# after the specials are escaped: the section's own signs, as LaTeX
_TEX_SIGNS = {
    "κ": r"$\kappa$",
    "±": r"$\pm$",
    "²": r"\textsuperscript{2}",
    "−": "--",
    "–": "--",
    "—": "---",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
}
# every character that ends a line somewhere (str.splitlines; CommonMark and TeX take \r):
# a space in a table row or a paragraph, which stay one line each
_BREAKS = {ord(ch): " " for ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
NUMERIC = ("count", "number", "share", "ci", "share_ci", "param")


def tex_escape(text: object) -> str:
    return "".join(_TEX_SIGNS.get(ch, ch) for ch in _tex_escape(str(text).translate(_BREAKS)))


def md_escape(text: object) -> str:
    return _md_escape(str(text).translate(_BREAKS))


def show(kind: str, value, null: str = NULL_MD, percent: str = "%") -> str:
    """A cell of a column of `kind` as every output prints it (steps.Column)."""
    if value is None or value == []:
        return null
    if kind == "count" and isinstance(value, int):
        return f"{value:,}"
    if kind == "number":
        return f"{value:.3f}"
    if kind == "share":
        return f"{100 * value:.1f}{percent}"
    if kind == "ci":
        return f"[{value[0]:.3f}, {value[1]:.3f}]"
    if kind == "share_ci":
        return f"[{100 * value[0]:.1f}{percent}, {100 * value[1]:.1f}{percent}]"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def cells(step: Mapping, null: str = NULL_MD, percent: str = "%") -> list[list[str]]:
    kinds = [c["kind"] for c in step["columns"]]
    return [
        [show(k, v, null, percent) for k, v in zip(kinds, row, strict=True)] for row in step["rows"]
    ]


def _align(columns: Sequence[Mapping]) -> list[str]:
    return ["r" if c["kind"] in NUMERIC else "l" for c in columns]


def to_markdown(section: Mapping) -> str:
    lines = [f"# Methods: {md_escape(section['name'])}", ""]
    for step in section["steps"]:
        lines += [f"## {md_escape(step['title'])}", "", md_escape(step["text"]), ""]
        if step["rows"]:
            header = [md_escape(c["header"]) for c in step["columns"]]
            sep = ["---:" if a == "r" else "---" for a in _align(step["columns"])]
            lines += ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
            lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in cells(step)]
            lines.append("")
    return "\n".join(lines)


def to_latex(section: Mapping) -> str:
    lines = [
        f"% Methods: {tex_escape(section['name'])} ({tex_escape(section['study'])}), "
        f"generated {tex_escape(section['generated_at'][:16])}",
        "% needs \\usepackage{booktabs}",
        "",
    ]
    for step in section["steps"]:
        title = tex_escape(step["title"])
        lines += [f"\\subsection*{{{title}}}", "", tex_escape(step["text"]), ""]
        if not step["rows"]:
            continue
        lines += [
            "\\begin{table}[ht]",
            "\\centering",
            f"\\caption{{{title}}}",
            f"\\label{{tab:methods-{step['step']}}}",
            f"\\begin{{tabular}}{{{''.join(_align(step['columns']))}}}",
            "\\toprule",
            " & ".join(tex_escape(c["header"]) for c in step["columns"]) + " \\\\",
            "\\midrule",
            *(
                " & ".join(tex_escape(c) for c in row) + " \\\\"
                for row in cells(step, NULL_TEX, "%")
            ),
            "\\bottomrule",
            "\\end{tabular}",
            "\\end{table}",
            "",
        ]
    return "\n".join(lines)
