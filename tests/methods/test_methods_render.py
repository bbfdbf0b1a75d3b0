"""The methods section's Markdown and LaTeX (annotation/methods/render.py): names are text in
both (no HTML, link or table cell from a name in Markdown; no LaTeX command, column or
comment from one in LaTeX), each table is a booktabs table, every cell is shown by its
column's kind, and the section's own signs (κ, ±, ², −) become LaTeX."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from annotation.methods.render import show, tex_escape, to_latex, to_markdown


def section(name: str = "s", cell: object = "g") -> dict:
    return {
        "study": "s",
        "name": name,
        "generated_at": "2025-01-31T10:00:00+00:00",
        "steps": [
            {
                "step": "agreement",
                "title": "Agreement",
                "text": "Cohen's κ per group, ±5% margin, n0 = z² p (1 − p) / e².",
                "columns": [
                    {"name": "group", "header": "Group", "kind": "text"},
                    {"name": "cards", "header": "Cards", "kind": "count"},
                    {"name": "kappa", "header": "Cohen's κ", "kind": "number"},
                    {"name": "ci", "header": "95% CI", "kind": "ci"},
                    {"name": "share", "header": "Accuracy", "kind": "share"},
                    {"name": "share_ci", "header": "Wilson", "kind": "share_ci"},
                ],
                "rows": [
                    [cell, 12345, 0.8213, [0.7, 0.9], 0.9224, [0.881, 0.95]],
                    ["none", None, None, None, None, None],
                ],  # fmt: skip
                "data": {},
            },
            {
                "step": "sample",
                "title": "Sample",
                "text": "No sample.",
                "columns": [],
                "rows": [],
                "data": {},
            },  # fmt: skip
        ],
    }


def test_cells_are_shown_by_their_columns_kind():
    assert show("count", 12345) == "12,345"
    assert show("number", 0.8213) == "0.821"
    assert show("share", 0.9224) == "92.2%"
    assert show("ci", [0.7, 0.9]) == "[0.700, 0.900]"
    assert show("share_ci", [0.881, 0.95]) == "[88.1%, 95.0%]"
    assert show("param", 1.0) == "1.0" and show("param", None) == "—"
    assert show("number", None, null="--") == "--"


def test_markdown_has_a_heading_text_and_table_per_step_and_no_table_when_empty():
    md = to_markdown(section())

    assert md.startswith("# Methods: s\n")
    assert "## Agreement\n\nCohen's κ per group" in md
    assert "| g | 12,345 | 0.821 | \\[0.700, 0.900\\] | 92.2% | \\[88.1%, 95.0%\\] |" in md
    assert "| none | — | — | — | — | — |" in md
    assert "| --- | ---: | ---: | ---: | ---: | ---: |" in md
    assert "## Sample\n\nNo sample.\n" in md and md.count("| --- ") == 1


def test_latex_is_a_booktabs_table_per_step_with_its_signs_as_latex():
    tex = to_latex(section(name="Smells & 100% #1"))

    assert tex.startswith("% Methods: Smells \\& 100\\% \\#1 (s)")
    assert "\\begin{tabular}{lrrrrr}\n\\toprule\n" in tex
    assert "Group & Cards & Cohen's $\\kappa$ & 95\\% CI & Accuracy & Wilson \\\\\n\\midrule" in tex
    assert "g & 12,345 & 0.821 & [0.700, 0.900] & 92.2\\% & [88.1\\%, 95.0\\%] \\\\" in tex
    assert "none & -- & -- & -- & -- & -- \\\\\n\\bottomrule\n\\end{tabular}" in tex
    assert "$\\pm$5\\% margin, n0 = z\\textsuperscript{2} p (1 -- p)" in tex
    assert tex.count("\\begin{table}") == 1  # the sample has no rows: no table


UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
UNESCAPED_AMP = re.compile(r"(?<!\\)&")


@given(st.text(max_size=40))
def test_a_name_never_makes_a_column_tag_or_link_in_markdown(name):
    row = next(line for line in to_markdown(section(cell=name)).splitlines() if "12,345" in line)

    assert len(UNESCAPED_PIPE.findall(row)) == 7  # six cells
    assert "<" not in row and ">" not in row
    assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", row)  # no [text](link)


@given(st.text(max_size=40))
def test_a_name_never_makes_a_column_comment_or_command_in_latex(name):
    escaped = tex_escape(name)
    row = next(line for line in to_latex(section(cell=name)).splitlines() if "12,345" in line)

    assert len(UNESCAPED_AMP.findall(row)) == 5  # six cells
    assert not re.search(r"(?<!\\)%", escaped)
    assert len(escaped.splitlines()) <= 1
    # a backslash only starts what the escape wrote
    written = r"\\(text(backslash|asciitilde|asciicircum|less|greater)\{\}|textsuperscript\{2\}|[&%$#_{}]|kappa\$|pm\$|geq\$|leq\$)"
    for match in re.finditer(r"\\", escaped):
        assert re.match(written, escaped[match.start() :]), escaped
