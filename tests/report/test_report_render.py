"""The Markdown, LaTeX and CSV writers of the report's tables."""

from __future__ import annotations

import csv
import io

from annotation.agreement.render import (
    TaxonomyEntry,
    fmt,
    tex_escape,
    to_csv,
    to_latex,
    to_markdown,
)

ENTRIES = [
    TaxonomyEntry("ambiguous_instruction", "Ambiguous Instruction", "User Intent Quality"),
    TaxonomyEntry("must_do_omission", "Must-Do Omission", "Historical Instruction Compliance"),
]


def _result():
    report = {
        "n_cards": 4,
        "pairs": {
            "alice|bob": {
                "n_common_cards": 4,
                "percent_agreement": 0.75,
                "cohen_kappa": 0.5714285714285714,
                "cohen_kappa_ci": [0.25, 1.0],
                "per_label_kappa": {"ambiguous_instruction": None, "must_do_omission": 1.0},
                "per_label_kappa_reason": {"ambiguous_instruction": "undefined: nobody used it"},
            }
        },
        "group_mean": {
            "cohen_kappa": 0.5714285714285714,
            "percent_agreement": 0.75,
            "per_label_kappa_macro": None,
            "per_label_kappa_macro_reason": "undefined: no pair has a defined value",
            "per_label_kappa_micro": 0.8,
        },
        "groups": {
            "G_1 & co": {
                "cohen_kappa": 0.5714285714285714,
                "cohen_kappa_ci": [0.25, 1.0],
                "percent_agreement": 0.75,
                "per_label_kappa_macro": None,
                "per_label_kappa_macro_reason": "undefined: no pair has a defined value",
                "per_label_kappa_micro": 0.8,
            }
        },
        "krippendorff_alpha_nominal": None,
        "krippendorff_alpha_nominal_reason": "undefined: one value",
        "prevalence": {"ambiguous_instruction": 0.0, "must_do_omission": 0.75},
    }
    extras = {
        "pairs_by_group": {"G_1 & co": ["alice|bob"]},
        "taxonomy_table": {
            "n_cards": 4,
            "n_instances": 3,
            "rows": [
                {"code": "ambiguous_instruction", "count": 0, "share": 0.0, "share_of_cards": 0.0},
                {"code": "must_do_omission", "count": 3, "share": 1.0, "share_of_cards": 0.75},
            ],
        },
    }
    return {"study": "s1", "round": 1, "axes": {"smell": {"report": report, "extras": extras}}}


def test_it_formats_numbers_with_three_decimals_and_null_as_a_dash():
    assert fmt(0.5714285714285714) == "0.571"
    assert fmt(12) == "12"
    assert fmt(None) == "—"
    assert fmt(None, "--") == "--"


def test_it_writes_markdown_tables():
    md = to_markdown(_result(), {"smell": ENTRIES})
    lines = md.splitlines()
    assert (
        "| Group | Pairs | Cohen's κ | 95% CI | Percent agreement | Per-label κ (macro) | Per-label κ (micro) |"
        in lines
    )
    assert "| G_1 & co | 1 | 0.571 | [0.250, 1.000] | 0.750 | — | 0.800 |" in lines
    assert "| All pairs | 1 | 0.571 | — | 0.750 | — | 0.800 |" in lines
    assert (
        "| Historical Instruction Compliance | Must-Do Omission | 3 | 75.00% | 100.00% |" in lines
    )
    assert "| User Intent Quality | Ambiguous Instruction | 0 | 0.00% | 0.00% |" in lines
    # the taxonomy's order, not the counts'
    assert md.index("Ambiguous Instruction") < md.index("Must-Do Omission")


def test_it_escapes_a_pipe_in_markdown():
    result = _result()
    result["axes"]["smell"]["report"]["groups"] = {
        "a|b": result["axes"]["smell"]["report"]["groups"]["G_1 & co"]
    }
    assert "| a\\|b | 0 | 0.571 |" in to_markdown(result, {"smell": ENTRIES})


def test_it_writes_latex_tabulars_escaped():
    tex = to_latex(_result(), {"smell": ENTRIES})
    assert tex.count("\\begin{tabular}") == 2 and tex.count("\\end{tabular}") == 2
    assert "G\\_1 \\& co & 1 & 0.571 & [0.250, 1.000] & 0.750 & -- & 0.800 \\\\" in tex
    assert "Must-Do Omission & 3 & 75.00\\% & 100.00\\% \\\\" in tex
    assert "Cohen's $\\kappa$ & 95\\% CI" in tex
    assert tex_escape("50% of #1_a & {b} ~ ^ \\") == (
        "50\\% of \\#1\\_a \\& \\{b\\} \\textasciitilde{} \\textasciicircum{} \\textbackslash{}"
    )


def test_it_writes_csv_in_long_format():
    rows = list(csv.DictReader(io.StringIO(to_csv(_result(), {"smell": ENTRIES}))))
    by = {(r["scope"], r["name"], r["statistic"], r["label"]): r for r in rows}
    g = by[("group", "G_1 & co", "cohen_kappa", "")]
    assert float(g["value"]) == 0.5714285714285714
    assert (g["ci_low"], g["ci_high"]) == ("0.25", "1.0")
    macro = by[("group", "G_1 & co", "per_label_kappa_macro", "")]
    assert macro["value"] == "" and macro["reason"].startswith("undefined")
    label = by[("pair", "alice|bob", "per_label_kappa", "ambiguous_instruction")]
    assert label["value"] == "" and label["reason"] == "undefined: nobody used it"
    assert by[("overall", "all pairs", "percent_agreement", "")]["value"] == "0.75"
    assert by[("axis", "", "krippendorff_alpha_nominal", "")]["reason"] == "undefined: one value"
    share = by[
        ("taxonomy", "Historical Instruction Compliance", "share_of_cards", "must_do_omission")
    ]
    assert share["value"] == "0.75"


HOSTILE = "<img src=x onerror=alert(1)>"


def _hostile_result():
    """The group, a pair and a type named like formulas and HTML; a negative kappa."""
    result = _result()
    report = result["axes"]["smell"]["report"]
    report["groups"] = {f"={HOSTILE}": report["groups"]["G_1 & co"]}
    report["pairs"] = {"@alice|bob": report["pairs"]["alice|bob"]}
    report["pairs"]["@alice|bob"]["cohen_kappa"] = -0.25
    result["axes"]["smell"]["extras"]["pairs_by_group"] = {f"={HOSTILE}": ["@alice|bob"]}
    entries = [TaxonomyEntry("ambiguous_instruction", HOSTILE, f"+{HOSTILE}"), ENTRIES[1]]
    return result, {"smell": entries}


def test_the_csv_neutralises_names_and_keeps_computed_numbers():
    text = to_csv(*_hostile_result())
    rows = list(csv.reader(io.StringIO(text)))
    names = {r[2] for r in rows[1:]}
    assert f"'={HOSTILE}" in names and "'@alice|bob" in names
    assert f"'+{HOSTILE}" in names  # the taxonomy table's category
    assert not any(n.startswith(("=", "+", "@")) for n in names)
    by = {(r[1], r[2], r[3]): r for r in rows}
    # a negative kappa is data: written as a number, read back as one
    assert by[("pair", "'@alice|bob", "cohen_kappa")][5] == "-0.25"


def test_markdown_escapes_html_in_group_and_type_names():
    md = to_markdown(*_hostile_result())
    assert "<img" not in md and "onerror=alert(1)&gt;" in md
    assert md.count("&lt;img") >= 3  # the group, the type and its category


def test_latex_escapes_html_in_group_and_type_names():
    tex = to_latex(*_hostile_result())
    assert "<img" not in tex and "\\textless{}img src=x onerror=alert(1)\\textgreater{}" in tex
