"""The lead's sample page (/s/SLUG/lead/sample/): the live calculator, the study's sample
with its methods paragraph and .txt download, who may open it; and the paragraph in the
agreement report (page, Markdown, LaTeX)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.intake.sampling import draw_sample, methods_paragraph
from annotation.models import Conversation, Role, Sample
from tests.factories import HTMX, make_conversation, make_study, make_user
from tests.report.helpers import labelled_study, make_report_job


def _page(study) -> str:
    return reverse("lead_sample", args=[study.slug])


def _txt(study) -> str:
    return reverse("lead_sample_methods", args=[study.slug])


def _sampled(study, n_total=12, n=5, **kwargs):
    for i in range(n_total):
        Conversation.objects.create(
            study=study,
            external_id=f"c{i:02}",
            source_format="wildchat" if i % 3 else "lmsys",
            source_file="d.jsonl",
            source_line=i,
            n_turns=2,
        )
    return draw_sample(study, n=n, seed=7, **kwargs)


def test_it_computes_the_size_as_the_lead_types(client, study, lead):
    client.force_login(lead)
    params = {"population": 81366, "confidence": 0.95, "margin": 0.05, "proportion": 0.5}
    response = client.get(_page(study), params, **HTMX)
    assert response.status_code == 200
    text = response.content.decode()
    assert text.lstrip().startswith('<div id="size"')  # only the partial
    assert '<strong id="sample-size">383</strong> of 81366' in text
    assert "z = 1.959964" in text
    narrower = client.get(_page(study), {**params, "margin": 0.03}, **HTMX).content.decode()
    assert '<strong id="sample-size">1054</strong>' in narrower


def test_it_fills_in_the_studys_population_and_wires_htmx(client, study, lead):
    for i in range(7):
        make_conversation(study, f"c{i}", n_turns=1)
    client.force_login(lead)
    page = client.get(_page(study)).content.decode()
    assert 'name="population" value="7"' in page
    assert '<strong id="sample-size">7</strong> of 7' in page
    assert 'hx-trigger="input changed delay:200ms, submit"' in page
    assert "No sample drawn yet" in page


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("margin", "0", "Margin must be between 0 and 1, both excluded (0.05 for ±5%); got 0."),
        ("confidence", "95", "Confidence must be between 0 and 1, both excluded"),
        ("population", "-3", "Population (N): Ensure this value is greater than or equal to 0."),
        ("proportion", "x", "Proportion (p): Enter a number."),
    ],
)
def test_it_names_a_bad_input(client, study, lead, field, value, message):
    client.force_login(lead)
    params = {"population": 100, "confidence": 0.95, "margin": 0.05, "proportion": 0.5}
    response = client.get(_page(study), {**params, field: value}, **HTMX)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert 'id="sample-size"' not in response.content.decode()


def test_it_shows_the_sample_and_its_methods_paragraph(client, study, lead):
    sample = _sampled(study, stratify=["source"])
    client.force_login(lead)
    page = client.get(_page(study)).content.decode()
    assert f'<textarea id="methods" readonly rows="4">{sample.methods}</textarea>' in page
    assert sample.methods.startswith("5 of 12 conversations, drawn at random with seed 7")
    assert "<td>source=lmsys</td><td>4</td><td>2</td>" in page
    assert "<td>source=wildchat</td><td>8</td><td>3</td>" in page
    # the population counts what the sample set aside: a new draw (--replace) draws from it
    assert 'name="population" value="12"' in page


def test_it_downloads_the_methods_paragraph_with_the_strata(client, study, lead):
    sample = _sampled(study, stratify=["source"])
    client.force_login(lead)
    response = client.get(_txt(study))
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="s1-sample.txt"'
    assert response.content.decode() == (
        f"{sample.methods}\n\nStrata (drawn of population):\n"
        "source=lmsys: 2 of 4\nsource=wildchat: 3 of 8\n"
    )


def test_it_has_no_download_before_a_sample(client, study, lead):
    client.force_login(lead)
    assert client.get(_txt(study)).status_code == 404


@pytest.mark.parametrize("url", [_page, _txt])
def test_an_annotator_is_told_leads_only(client, study, lead, alice, url):
    _sampled(study)
    study.add_member(alice, Role.ANNOTATOR)
    client.force_login(alice)
    response = client.get(url(study))
    assert response.status_code == 403
    assert "Leads only" in response.content.decode()
    assert client.get(url(study), **HTMX).status_code == 403


@pytest.mark.parametrize("url", [_page, _txt])
def test_charlie_outside_the_study_gets_a_404(client, study, lead, charlie, url):
    _sampled(study)
    client.force_login(charlie)
    assert client.get(url(study)).status_code == 404
    # a lead of another study is an outsider here too
    other = make_study("s2")
    other.add_member(charlie, Role.LEAD)
    assert client.get(url(study), **HTMX).status_code == 404


def test_a_visitor_is_sent_to_log_in(client, study):
    response = client.get(_page(study))
    assert response.status_code == 302
    assert "login" in response["Location"]


# -- the agreement report ------------------------------------------------------------------


@pytest.fixture
def reported(study, lead):
    labelled_study(study)
    make_report_job(study, n_boot=50)
    sample = Sample(study=study, population=81_366, n=383, seed=7, confidence=0.95,
                    margin=0.05, proportion=0.5, min_turns=2, created_by=make_user("lead"))  # fmt: skip
    sample.methods = methods_paragraph(sample)
    sample.save()
    return sample


def test_the_report_quotes_the_sample(client, study, lead, reported):
    assert reported.methods == (
        "383 of 81,366 conversations with at least 2 turns (95% confidence, ±5% margin, "
        "p = 0.5), drawn at random with seed 7."
    )
    client.force_login(lead)
    page = client.get(reverse("report", args=[study.slug])).content.decode()
    assert f"<h2>Sample</h2>\n  <p>{reported.methods}</p>" in page
    md = client.get(reverse("report_download", args=[study.slug, "md"])).content.decode()
    assert md.endswith(f"\n## Sample\n\n{reported.methods}\n")
    tex = client.get(reverse("report_download", args=[study.slug, "tex"])).content.decode()
    assert tex.endswith(
        "\n% sample (methods paragraph)\n383 of 81,366 conversations with at least 2 turns "
        "(95\\% confidence, ±5\\% margin, p = 0.5), drawn at random with seed 7.\n"
    )
    csv = client.get(reverse("report_download", args=[study.slug, "csv"])).content.decode()
    assert "seed 7" not in csv  # the long-format numbers only


def test_the_report_quotes_the_latest_sample_only(client, study, lead, reported):
    later = Sample(study=study, population=81_366, n=400, seed=8)
    later.methods = methods_paragraph(later)
    later.save()
    client.force_login(lead)
    md = client.get(reverse("report_download", args=[study.slug, "md"])).content.decode()
    assert md.endswith("\n## Sample\n\n400 of 81,366 conversations, drawn at random with seed 8.\n")
    assert "seed 7" not in md


def test_the_report_without_a_sample_says_nothing_of_one(client, study, lead):
    labelled_study(study)
    make_report_job(study, n_boot=50)
    client.force_login(lead)
    assert "## Sample" not in (
        client.get(reverse("report_download", args=[study.slug, "md"])).content.decode()
    )
    assert (
        "<h2>Sample</h2>" not in client.get(reverse("report", args=[study.slug])).content.decode()
    )


def test_it_lists_the_strata_by_name_on_every_database(client, study, lead):
    # jsonb (PostgreSQL) orders keys shortest first; the page and the .txt sort by name
    strata = {
        "source=wildchat": {"population": 8, "drawn": 3},
        "source=x": {"population": 4, "drawn": 2},
    }
    Sample.objects.create(study=study, population=12, n=5, seed=1, strata=strata, methods="m")
    client.force_login(lead)
    page = client.get(_page(study)).content.decode()
    assert page.index("<td>source=wildchat</td>") < page.index("<td>source=x</td>")
    assert client.get(_txt(study)).content.decode() == (
        "m\n\nStrata (drawn of population):\nsource=wildchat: 3 of 8\nsource=x: 2 of 4\n"
    )
