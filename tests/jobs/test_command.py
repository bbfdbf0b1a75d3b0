"""`python manage.py agreement SLUG [--round] [--json] [--seed] [--bootstrap]`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.agreement.data import compute_study_report
from annotation.agreement.spec import show, taxonomy_entries
from annotation.agreement.tables import report_spec
from tests.report.helpers import named

pytestmark = pytest.mark.django_db

# every key of AGREEMENT.md's table, per axis
AGREEMENT_KEYS = {
    "n_cards",
    "n_annotators",
    "n_annotations",
    "n_pairable_cards",
    "pairs",
    "group_mean",
    "groups",
    "percent_agreement_all",
    "mean_pairwise_percent_agreement",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_nominal_per_label",
    "krippendorff_alpha_masi",
    "fleiss_kappa",
    "fleiss_kappa_per_label",
    "fleiss_kappa_per_label_macro",
    "fleiss_kappa_per_label_macro_n_defined",
    "fleiss_kappa_complete_cards",
    "n_complete_cards",
    "prevalence",
}
PAIR_KEYS = {
    "n_common_cards",
    "percent_agreement",
    "cohen_kappa",
    "per_label_kappa",
    "per_label_kappa_macro",
    "per_label_kappa_macro_n_defined",
    "per_label_kappa_micro",
}
MEAN_KEYS = {"cohen_kappa", "percent_agreement", "per_label_kappa_macro", "per_label_kappa_micro"}


def run(*args: str) -> str:
    out = StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


def without_time(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "computed_at"}


def test_it_prints_the_json_of_compute_study_report(study, labelled):
    printed = json.loads(run("s1", "--json", "--bootstrap", "40", "--seed", "7"))
    expected = compute_study_report(study, round=1, n_boot=40, seed=7)
    assert without_time(printed) == json.loads(json.dumps(without_time(expected)))
    report = printed["axes"]["smell"]["report"]
    assert AGREEMENT_KEYS <= set(report)
    for pair in report["pairs"].values():
        assert PAIR_KEYS <= set(pair)
    assert MEAN_KEYS <= set(report["group_mean"])
    assert set(report["groups"]) == {"g1", "g2"}
    assert named(report["pairs"])["alice|bob"]["cohen_kappa_ci"] is not None


def test_it_reports_the_round_asked_for(labelled):
    report = json.loads(run("s1", "--json", "--round", "2", "--bootstrap", "0"))
    assert report["round"] == 2
    assert report["axes"]["smell"]["report"]["n_annotations"] == 3


def test_it_prints_a_readable_summary(labelled):
    text = run("s1", "--bootstrap", "20")
    assert "Study s1, round 1" in text
    assert "Axis smell: 6 cards, 4 annotators, 10 records, 4 pairable cards" in text
    assert "alice|bob: 3 common cards" in text
    assert "Group g2: kappa" in text
    assert "Krippendorff's alpha: nominal" in text
    assert "incomplete_instruction" in text and "0.333" in text  # its prevalence


def test_it_names_an_unknown_study(study):
    with pytest.raises(CommandError, match="unknown study 'nope'.*s1"):
        run("nope")


def test_it_refuses_a_round_below_1(study):
    with pytest.raises(CommandError, match="--round"):
        run("s1", "--round", "0")


def test_its_summary_shows_the_report_pages_numbers(study, labelled):
    """The summary renders the report's spec: each annotator's macro F1 against the
    consensus and the per-type summary of the pairs' kappas, as the page and the downloads
    show them."""
    text = run("s1", "--bootstrap", "20", "--seed", "3")
    result = compute_study_report(study, round=1, n_boot=20, seed=3)
    entries, names = taxonomy_entries(study.taxonomy_version)
    (axis,) = report_spec(result, entries, names)
    tables = {t.id: t for t in axis.tables}
    sections = {}
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("    "):
            section = sections.setdefault(line.strip().rstrip(":"), [])
        elif line.startswith("    "):
            section.append(line)

    def line_of(table, title: str) -> str:
        (line,) = [line for line in sections[table.title] if line.startswith(f"    {title}: ")]
        return line

    versus = tables["versus"]
    f1 = [c.name for c in versus.columns].index("macro_f1")
    assert any(row.cells[f1].value is not None for row in versus.rows)
    for row in versus.rows:
        macro = row.cells[f1].value
        shown = "undefined" if macro is None else show("number", macro)
        assert f"mean F1 over types {shown}" in line_of(versus, row.text)
    per_type = tables["per-type"]
    at = [c.name for c in per_type.columns].index("pair_kappa_mean")
    defined = [r for r in per_type.rows if r.cells[at].value is not None]
    assert defined
    for row in defined:
        assert f"mean pair kappa {show('number', row.cells[at].value)}" in line_of(
            per_type, row.text
        )
    g1 = tables["kappa-groups"].rows[0]
    lo, hi = result["axes"]["smell"]["report"]["groups"]["g1"]["cohen_kappa_ci"]
    assert f"95% CI [{lo:.3f}, {hi:.3f}]" in line_of(tables["kappa-groups"], "Group g1")
    assert g1.text == "Group g1"
