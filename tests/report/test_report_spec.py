"""One spec for the report's tables (annotation/agreement/tables.py): the page, the CSV,
Markdown and LaTeX downloads show the same numbers for each table, the downloads carry the
macro F1 and the per-type summaries the page shows, and Markdown lets no HTML through."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.agreement.render import to_latex, to_markdown
from annotation.agreement.spec import CSV, MD, PAGE, TaxonomyEntry, show, taxonomy_entries
from annotation.agreement.tables import report_spec

from .helpers import done_job, labelled_study, make_report_job


@pytest.fixture
def job(study, lead):
    """A done job with everything the job computes: the extras, each annotator against the
    consensus and between groups."""
    labelled_study(study)
    return done_job(study, compute_study_report(study, n_boot=50))


def _get(client, user, study, fmt_=None) -> str:
    client.force_login(user)
    if fmt_ is None:
        return client.get(reverse("report", args=[study.slug])).content.decode()
    return client.get(reverse("report_download", args=[study.slug, fmt_])).content.decode()


def _spec(study, result):
    entries, names = taxonomy_entries(study.taxonomy_version)
    (axis,) = report_spec(result, entries, names)
    return axis.tables


def _text(cell_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell_html)).strip()


def _page_tables(page: str) -> list[tuple[str, list[list[str]]]]:
    """(table id, rows of cells) in the page's order; the headline as one row."""
    out = []
    for m in re.finditer(r'<(table|dl) class="[^"]*" data-table="([\w-]+)">(.*?)</\1>', page, re.S):
        kind, tid, body = m.groups()
        if kind == "dl":
            out.append((tid, [[_text(c) for c in re.findall(r"<dd>(.*?)</dd>", body, re.S)]]))
            continue
        body = body[body.index("<tbody>") :]
        rows = [
            [_text(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
        ]
        out.append((tid, rows))
    return out


def _md_cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\) \| ", line[2:-2])
    unescaped = (re.sub(r"\\([\\|\[\]])", r"\1", c) for c in cells)
    return [html.unescape(c).strip() for c in unescaped]


def _md_tables(md: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each Markdown table, in order."""
    out = []
    for block in re.split(r"\n### ", md)[1:]:
        title, _, body = block.partition("\n\n")
        lines = [line for line in body.splitlines() if line.startswith("| ")]
        out.append((title, _md_cells(lines[0]), [_md_cells(line) for line in lines[2:]]))
    return out


def test_every_output_shows_the_same_numbers_for_each_table(client, study, lead, job):
    job.refresh_from_db()  # as the views read it (jsonb orders keys its own way)
    tables = _spec(study, job.result)
    page = [rows for tid, rows in _page_tables(_get(client, lead, study))]
    md = _md_tables(_get(client, lead, study, "md"))
    by = {
        (r["scope"], r["name"], r["statistic"], r["label"]): r
        for r in csv.DictReader(io.StringIO(_get(client, lead, study, "csv")))
    }
    shown = [t for t in tables if t.rows and PAGE in t.outputs]
    assert len(page) == len(shown) and {t.id for t in shown} >= {"versus", "per-type"}
    assert [title for title, _, _ in md] == [t.title for t in tables if t.rows and MD in t.outputs]
    md_rows = {title: rows for title, _, rows in md}
    n_checked = 0
    for table, page_rows in zip(shown, page, strict=True):
        columns = [table.columns[i] for i in table.shown()]
        assert len(page_rows) == len(table.rows)
        for r, (row, cells) in enumerate(zip(table.rows, page_rows, strict=True)):
            md_cells = md_rows[table.title][r]
            for j, (column, cell) in enumerate(zip(columns, cells, strict=True)):
                # the page shows a category once over its types, Markdown on every row
                above = md_rows[table.title][r - 1][j] if r else None
                assert cell == md_cells[j] or (cell == "" and md_cells[j] == above)
                if column.kind in ("text", "ci") or CSV not in table.outputs:
                    continue
                stored = by[(row.scope or table.scope, row.name, column.name, row.label)]
                value = stored["value"]
                parsed = (
                    None if value == "" else int(value) if column.kind == "count" else float(value)
                )
                assert show(column.kind, parsed) == cell
                if f"{column.name}_ci" in {c.name for c in columns} and stored["ci_low"]:
                    ci = [float(stored["ci_low"]), float(stored["ci_high"])]
                    assert show("ci", ci) == cells[j + 1]
                n_checked += 1
    assert n_checked > 100


def test_the_downloads_carry_macro_f1_and_the_per_type_summaries(client, study, lead, job):
    axis = job.result["axes"]["smell"]
    alice = axis["versus_consensus"]["alice"]
    f1 = [v for v in alice["f1"].values() if v is not None]
    macro = sum(f1) / len(f1)
    page = _get(client, lead, study)
    assert show("number", macro) in page

    rows = list(csv.DictReader(io.StringIO(_get(client, lead, study, "csv"))))
    by = {(r["scope"], r["name"], r["statistic"], r["label"]): r["value"] for r in rows}
    assert float(by[("versus", "alice", "macro_f1", "")]) == macro
    # per type over the pairs: mean, lowest and highest of the defined kappas
    pairs = axis["report"]["pairs"].values()
    kappas = [v for p in pairs if (v := p["per_label_kappa"]["must_do_omission"]) is not None]
    assert float(by[("axis", "", "pair_kappa_mean", "must_do_omission")]) == sum(kappas) / len(
        kappas
    )
    assert float(by[("axis", "", "pair_kappa_min", "must_do_omission")]) == min(kappas)
    assert by[("axis", "", "n_pairs_defined", "must_do_omission")] == str(len(kappas))
    assert (
        float(by[("versus", "alice", "f1", "must_do_omission")]) == alice["f1"]["must_do_omission"]
    )

    md = {
        title: (header, rows) for title, header, rows in _md_tables(_get(client, lead, study, "md"))
    }
    header, versus = md["Each annotator against the consensus"]
    at = header.index("Mean F1 over types")
    (row,) = [r for r in versus if r[0] == "alice"]
    assert row[1] == str(alice["n_cards"]) and row[at] == show("number", macro)
    assert row[at + 1] == show("ci", alice["macro_f1_ci"])
    header, per_type = md["Per-type kappa"]
    assert "Mean of the pairs' κ" in header
    must_do = next(r for r in per_type if r[0] == "Must-Do Omission")
    assert must_do[header.index("Mean of the pairs' κ")] == show(
        "number", sum(kappas) / len(kappas)
    )

    tex = _get(client, lead, study, "tex")
    assert "Mean F1 over types" in tex
    assert f"alice & {alice['n_cards']} & " in tex and show("number", macro) in tex


def test_the_page_rounds_an_interval_as_the_downloads_do(client, study, lead):
    labelled_study(study)
    job = make_report_job(study)
    # a tie at the third decimal: Python's format rounds 0.0625 to 0.062, the template's
    # floatformat (decimal, half up) to 0.063
    job.result["axes"]["smell"]["report"]["groups"]["G1"]["cohen_kappa_ci"] = [0.0625, 0.9375]
    job.save()
    md = _get(client, lead, study, "md")
    page = _get(client, lead, study)
    assert "| G1 | 1 | " in md and "[0.062, 0.938] |" in md
    row = page[page.index('<th scope="row">G1</th>') :]
    assert "[0.062, 0.938]" in row[: row.index("</tr>")]


EVIL = "<img src=x onerror=alert(1)>"


def test_markdown_lets_no_html_through():
    report = {
        "pairs": {"a|b": {"n_common_cards": 2, "per_label_kappa": {"x": 1.0}}},
        "groups": {EVIL: {"cohen_kappa": 0.5}},
        "group_mean": {"cohen_kappa": 0.5},
        "prevalence": {"x": 0.5},
    }
    extras = {
        "taxonomy_table": {"n_cards": 2, "n_instances": 1, "rows": [{"code": "x", "count": 1}]}
    }
    result = {"study": "s1", "round": 1, "axes": {"smell": {"report": report, "extras": extras}}}
    entries = {"smell": [TaxonomyEntry("x", EVIL, f"[click](javascript:alert(1)) {EVIL}")]}

    md = to_markdown(result, entries)
    assert "<img" not in md and "<" not in md.replace("&lt;", "")
    assert "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "[click](javascript" not in md and "\\[click\\](javascript" in md
    tex = to_latex(result, entries)
    assert "<img" not in tex and "\\textless{}img src=x onerror=alert(1)\\textgreater{}" in tex
