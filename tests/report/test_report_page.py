"""The agreement report page: leads and moderators only, the numbers of the latest done
job, charts as well-formed SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.agreement.render import fmt
from annotation.models import Annotation, Job, JobKind, JobStatus
from tests.factories import make_user

from .helpers import G1_LABELS, labelled_study, make_report_job


@pytest.fixture
def labelled(study, lead):
    return labelled_study(study)


def _get(client, user, study):
    client.force_login(user)
    return client.get(reverse("report", args=[study.slug]))


def _svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]


def test_it_says_when_nothing_was_computed(client, study, lead):
    response = _get(client, lead, study)
    assert response.status_code == 200
    assert "No agreement computed yet — start one from the study page" in response.text


def test_it_ignores_jobs_that_are_not_done(client, study, lead):
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.FAILED)
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.RUNNING)
    assert "No agreement computed yet" in _get(client, lead, study).text


def test_it_shows_the_kappa_of_each_group(client, study, lead, labelled):
    job = make_report_job(study)
    report = job.result["axes"]["smell"]["report"]
    html = _get(client, lead, study).text
    table = html[html.index('class="numbers kappa-groups"') :]
    table = table[: table.index("</table>")]
    for name in ("G1", "G2"):
        row = table[table.index(f'<th scope="row">{name}</th>') :]
        row = row[: row.index("</tr>")]
        group = report["groups"][name]
        assert fmt(group["cohen_kappa"]) in row
        lo, hi = group["cohen_kappa_ci"]
        assert f"[{lo:.3f}, {hi:.3f}]" in row
    overall = table[table.index('<th scope="row">All pairs</th>') :]
    assert fmt(report["group_mean"]["cohen_kappa"]) in overall[: overall.index("</tr>")]
    assert fmt(report["krippendorff_alpha_nominal"]) in html


def test_it_renders_null_as_a_dash_with_the_reason(client, study, lead, labelled):
    job = make_report_job(study)
    report = job.result["axes"]["smell"]["report"]
    assert report["fleiss_kappa"] is None  # two annotators per group: not in the headline
    reason = report["pairs"]["alice|bob"]["per_label_kappa_reason"][
        "partial_functionality_breakdown"
    ]
    html = _get(client, lead, study).text
    assert f'<span class="null" title="{reason}">—</span>' in html
    assert "Fleiss" not in html


def test_it_draws_well_formed_charts(client, study, lead, labelled):
    make_report_job(study)
    html = _get(client, lead, study).text
    svgs = _svgs(html)
    titles = [s.find("{http://www.w3.org/2000/svg}title").text for s in svgs]
    assert titles[0] == "Per-type Cohen's kappa, axis smell"
    assert titles[1].startswith("Label co-occurrence over 6 cards with a consensus")
    assert "alice (rows) against bob (columns) on 6 common cards" in titles
    assert "charlie (rows) against dave (columns) on 4 common cards" in titles
    assert len(svgs) == 4
    for s in svgs:
        assert s.get("viewBox")
    assert "<script" not in html.split("<main")[1]


def test_it_prints_the_taxonomy_table_in_the_taxonomys_order(client, study, lead, labelled):
    make_report_job(study)
    html = _get(client, lead, study).text
    table = html[html.index('class="numbers taxonomy-table"') :]
    table = table[: table.index("</table>")]
    names = re.findall(r"<td>([A-Z][\w\- ]+)</td><td>(\d+)</td>", table)
    assert [n for n, _ in names][:3] == [
        "Ambiguous Instruction",
        "Incomplete Instruction",
        "Must-Do Omission",
    ]
    # consensus: the unanimous cards (G1: 1, 3, 5; G2: 1, 3, 4) carry must_do_omission twice,
    # signature_mismatch and must_not_violation once: 4 instances
    counts = dict(names)
    assert counts["Must-Do Omission"] == "2"
    assert "50.00%" in table and "25.00%" in table


def test_it_shows_the_latest_done_job(client, study, lead, labelled):
    old = make_report_job(study)
    old.finished_at = timezone.now() - timezone.timedelta(days=1)
    old.result["axes"]["smell"]["report"]["groups"]["G1"]["cohen_kappa"] = -0.987654
    old.save()
    make_report_job(study)
    assert "-0.988" not in _get(client, lead, study).text


def test_it_says_the_report_is_stale_after_a_label_changes(client, study, lead, labelled):
    make_report_job(study)
    assert "stale" not in _get(client, lead, study).text.lower()
    turn = labelled["turns"][len(G1_LABELS) - 1]  # a G1 card alice labelled
    alice = make_user("alice")
    types = study.taxonomy_version.types_by_code()
    Annotation.record(turn=turn, annotator=alice, types=[types["code_rollback"]])
    assert "Stale: annotations changed since this was computed" in _get(client, lead, study).text


def test_moderators_see_the_report(client, study, labelled):
    make_report_job(study)
    assert _get(client, labelled["moderator"], study).status_code == 200


@pytest.mark.parametrize("username", ["alice", "outsider"])
def test_annotators_get_403_and_outsiders_get_404(client, study, labelled, username):
    make_report_job(study)
    user = make_user(username)
    refused = 403 if username == "alice" else 404  # a member is told why, an outsider nothing
    assert _get(client, user, study).status_code == refused
    for fmt_ in ("json", "csv", "md", "tex"):
        url = reverse("report_download", args=[study.slug, fmt_])
        assert client.get(url).status_code == refused


def test_it_redirects_anonymous_users_to_login(client, study):
    response = client.get(reverse("report", args=[study.slug]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_it_renders_the_result_of_the_agreement_job_code(client, study, lead, labelled):
    result = compute_study_report(study, n_boot=50)
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=result,
        finished_at=timezone.now(),
    )
    html = _get(client, lead, study).text
    assert fmt(result["axes"]["smell"]["report"]["groups"]["G2"]["cohen_kappa"]) in html
    assert len(_svgs(html)) == 4
    assert "Stale" not in html
