"""The report's downloads: JSON as stored, CSV, and the tables as Markdown and LaTeX."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.agreement.render import fmt

from .helpers import labelled_study, make_report_job


@pytest.fixture
def job(study, lead):
    labelled_study(study)
    return make_report_job(study)


def _download(client, lead, study, fmt_):
    client.force_login(lead)
    return client.get(reverse("report_download", args=[study.slug, fmt_]))


def test_it_downloads_the_whole_result_as_json(client, study, lead, job):
    response = _download(client, lead, study, "json")
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="s1-agreement-round1.json"'
    assert json.loads(response.content) == job.result


def test_it_downloads_markdown_tables(client, study, lead, job):
    response = _download(client, lead, study, "md")
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="s1-agreement-round1.md"'
    text = response.content.decode()
    g1 = job.result["axes"]["smell"]["report"]["groups"]["G1"]
    lo, hi = g1["cohen_kappa_ci"]
    assert f"| G1 | 1 | {fmt(g1['cohen_kappa'])} | [{lo:.3f}, {hi:.3f}] |" in text
    # consensus cards carrying it (2 of 6), then its share of the 4 label instances
    assert "| Historical Instruction Compliance | Must-Do Omission | 2 | 33.33% | 50.00% |" in text


def test_it_downloads_latex_tables(client, study, lead, job):
    response = _download(client, lead, study, "tex")
    assert response["Content-Type"] == "application/x-tex; charset=utf-8"
    assert response["Content-Disposition"].endswith('filename="s1-agreement-round1.tex"')
    text = response.content.decode()
    assert "\\begin{tabular}{llrrr}" in text
    assert "Must-Do Omission & 2 & 33.33\\% & 50.00\\% \\\\" in text


def test_it_downloads_csv(client, study, lead, job):
    response = _download(client, lead, study, "csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    pair = job.result["axes"]["smell"]["report"]["pairs"]["charlie|dave"]
    kappa = next(
        r
        for r in rows
        if (r["scope"], r["name"], r["statistic"]) == ("pair", "charlie|dave", "cohen_kappa")
    )
    assert float(kappa["value"]) == pair["cohen_kappa"]


def test_it_404s_without_a_job_or_for_an_unknown_format(client, study, lead):
    assert _download(client, lead, study, "md").status_code == 404
    labelled_study(study)
    make_report_job(study)
    assert _download(client, lead, study, "xlsx").status_code == 404
