"""The taxonomy table: per type the consensus cards carrying it and their share of the
consensus cards, the share of label instances (as the study's paper reports it), and a
"no smell" row for the consensus cards with the empty set; every share column names its
denominator. On the page, in the Markdown, LaTeX and CSV downloads and in the JSON."""

from __future__ import annotations

import csv
import io
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.agreement.extras import build_extras
from annotation.agreement.render import TaxonomyEntry, to_csv, to_latex, to_markdown

from .helpers import labelled_study, make_report_job
from .test_report_extras import CODES, small

# The consensus of helpers.labelled_study: the unanimous cards. G1: must_do_omission,
# "no smell", signature_mismatch; G2: must_not_violation, "no smell", must_do_omission.
N_CARDS, N_INSTANCES, N_NO_SMELL = 6, 4, 2


def test_it_counts_the_consensus_cards_with_no_smell():
    table = build_extras(small(), CODES, {1: {"a", "b"}, 2: set(), 3: {"b"}, 4: set()})[
        "taxonomy_table"
    ]
    assert (table["n_cards"], table["n_instances"]) == (4, 3)
    no_smell = table["no_smell"]
    assert (no_smell["count"], no_smell["share_of_cards"]) == (2, 0.5)
    # the empty set is no label instance: that share does not apply to it
    assert no_smell["share"] is None and no_smell["share_reason"].startswith("not applicable")
    # the types' shares are unchanged: of consensus cards, and of label instances
    b = table["rows"][1]
    assert (b["count"], b["share_of_cards"], b["share"]) == (2, 0.5, 2 / 3)


def test_it_reports_no_smell_as_undefined_without_consensus():
    no_smell = build_extras(small(), CODES, {})["taxonomy_table"]["no_smell"]
    assert no_smell["count"] == 0
    assert no_smell["share_of_cards"] is None
    assert no_smell["share_of_cards_reason"].startswith("undefined:")


@pytest.fixture
def job(study, lead):
    labelled_study(study)
    return make_report_job(study)


def _taxonomy_table(html: str) -> str:
    table = html[html.index('class="numbers taxonomy-table"') :]
    return table[: table.index("</table>")]


def _cells(row_html: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", c).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_html, re.S)
    ]


def _rows(table: str) -> dict[str, list[str]]:
    """{type name: its cells}"""
    rows = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
        cells = _cells(tr)
        if len(cells) >= 5:
            rows[cells[1]] = cells
    return rows


def test_the_page_shows_both_shares_with_their_denominators_and_a_no_smell_row(
    client, study, lead, job
):
    client.force_login(lead)
    table = _taxonomy_table(client.get(reverse("report", args=[study.slug])).text)

    header = _cells(re.search(r"<thead>(.*?)</thead>", table, re.S).group(1))
    assert header[2:] == [
        "Consensus cards",
        f"Share of consensus cards (n = {N_CARDS})",
        f"Share of label instances (n = {N_INSTANCES})",
    ]
    rows = _rows(table)
    assert rows["Must-Do Omission"][2:] == ["2", "33.33%", "50.00%"]
    assert rows["Signature Mismatch"][2:] == ["1", "16.67%", "25.00%"]
    assert rows["No smell (empty set)"][2:] == [str(N_NO_SMELL), "33.33%", "—"]


def test_the_markdown_and_latex_tables_state_their_denominators(client, study, lead, job):
    client.force_login(lead)
    md = client.get(reverse("report_download", args=[study.slug, "md"])).content.decode()
    tex = client.get(reverse("report_download", args=[study.slug, "tex"])).content.decode()

    lines = md.splitlines()
    assert (
        f"| Category | Type | Consensus cards | Share of consensus cards (n = {N_CARDS}) "
        f"| Share of label instances (n = {N_INSTANCES}) |"
    ) in lines
    assert "| Historical Instruction Compliance | Must-Do Omission | 2 | 33.33% | 50.00% |" in lines
    assert f"|  | No smell (empty set) | {N_NO_SMELL} | 33.33% | — |" in lines
    assert (
        f"Share of consensus cards ($n = {N_CARDS}$) & Share of label instances ($n = {N_INSTANCES}$)"
    ) in tex
    assert "Must-Do Omission & 2 & 33.33\\% & 50.00\\% \\\\" in tex
    assert f" & No smell (empty set) & {N_NO_SMELL} & 33.33\\% & -- \\\\" in tex


def test_the_csv_has_the_no_smell_row_and_the_denominators(client, study, lead, job):
    client.force_login(lead)
    text = client.get(reverse("report_download", args=[study.slug, "csv"])).content.decode()

    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["scope"] == "taxonomy"]
    by = {(r["name"], r["statistic"], r["label"]): r for r in rows}
    assert by[("", "n_cards", "")]["value"] == str(N_CARDS)
    assert by[("", "n_instances", "")]["value"] == str(N_INSTANCES)
    assert by[("no smell", "count", "")]["value"] == str(N_NO_SMELL)
    assert float(by[("no smell", "share_of_cards", "")]["value"]) == N_NO_SMELL / N_CARDS
    share = by[("no smell", "share", "")]
    assert share["value"] == "" and share["reason"].startswith("not applicable")


def test_a_result_computed_before_the_no_smell_count_still_renders():
    extras = {
        "taxonomy_table": {
            "n_cards": 4,
            "n_instances": 3,
            "rows": [{"code": "a", "count": 3, "share": 1.0, "share_of_cards": 0.75}],
        }
    }
    result = {"study": "s1", "round": 1, "axes": {"smell": {"report": {}, "extras": extras}}}
    entries = {"smell": [TaxonomyEntry("a", "A", "Cat")]}

    md = to_markdown(result, entries)
    assert "| Cat | A | 3 | 75.00% | 100.00% |" in md
    assert "No smell" not in md  # not counted then: no row rather than a wrong zero
    assert "No smell" not in to_latex(result, entries)
    assert "no smell" not in to_csv(result, entries)


def test_the_agreement_commands_json_has_the_no_smell_row(study, lead):
    labelled_study(study)
    out = StringIO()
    call_command("agreement", "s1", "--json", "--bootstrap", "0", stdout=out)

    table = json.loads(out.getvalue())["axes"]["smell"]["extras"]["taxonomy_table"]
    assert (table["n_cards"], table["n_instances"]) == (N_CARDS, N_INSTANCES)
    assert table["no_smell"]["count"] == N_NO_SMELL
    assert table["no_smell"]["share_of_cards"] == N_NO_SMELL / N_CARDS
