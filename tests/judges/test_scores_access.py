"""Machine judges are the leads' alone (issue 22 points 5 and 6): the report page's judges
panel, its downloads (JSON, CSV, Markdown, LaTeX) and every route to an agreement job's
result show a lead the judges' scores, and a moderator of the same group nothing of them
(no section, no judge's row against the consensus, no judge's name); an annotator does not
read the report at all."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.access import JobResults
from annotation.agreement.data import compute_study_report
from annotation.models import Job, JobKind, JobStatus, Role

from .scores_world import judged_study

pytestmark = pytest.mark.django_db

JUDGE_NAMES = ("det-code-rollback@1", "llm-gpt-x@3fa2c1", "code-rollback", "llm-annotate")


@pytest.fixture
def world(study, lead):
    world = judged_study(study)
    result = compute_study_report(study, n_boot=40, seed=2)
    assert "judges" in result and result["judge_annotators"]
    world["job"] = Job.objects.create(
        study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, result=result
    )
    return world


def _download(client, study, fmt: str) -> str:
    response = client.get(reverse("report_download", args=[study.slug, fmt]))
    assert response.status_code == 200
    return b"".join(response).decode() if response.streaming else response.content.decode()


def test_the_lead_reads_the_judges_scores_on_the_page(client, study, lead, world):
    client.force_login(lead)
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    assert "Machine judges against the gold, the annotators beside them" in html
    assert f"code-rollback@1 (run {world['detector'].pk})" in html
    assert "alice (annotator)" in html  # the ceiling beside the judge
    assert "Machine judges against each other" in html
    assert "precision-recall" in html and "<svg" in html
    assert 'data-table="judge-threshold"' in html


def test_the_lead_downloads_them(client, study, lead, world):
    client.force_login(lead)
    data = json.loads(_download(client, study, "json"))
    assert data["judges"]["pseudo_users"] == ["det-code-rollback@1", "llm-gpt-x@3fa2c1"]
    csv = _download(client, study, "csv")
    assert ",judge-ceiling," in csv and ",judge-pr," in csv and ",judge-threshold," in csv
    assert "Machine judges against the gold" in _download(client, study, "md")
    assert "Machine judges against the gold" in _download(client, study, "tex")


@pytest.mark.parametrize("fmt", ["json", "csv", "md", "tex"])
def test_a_moderator_of_the_judged_group_downloads_nothing_of_them(client, study, world, fmt):
    client.force_login(world["moderator"])
    body = _download(client, study, fmt)
    for name in JUDGE_NAMES:
        assert name not in body
    assert "alice" in body  # the report itself is there
    if fmt == "json":
        data = json.loads(body)
        assert "judges" not in data and "judge_annotators" not in data
        assert set(data["axes"]["smell"]["versus_consensus"]) == {"alice", "bob", "charlie", "dave"}


def test_a_moderator_reads_the_report_page_without_them(client, study, world):
    client.force_login(world["moderator"])
    response = client.get(reverse("report", args=[study.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Each annotator against the consensus" in html
    assert "Machine judges" not in html
    for name in JUDGE_NAMES:
        assert name not in html


def test_an_annotator_of_the_judged_group_does_not_read_the_report(client, study, world):
    client.force_login(world["g1"].annotators.get(username="alice"))
    assert client.get(reverse("report", args=[study.slug])).status_code == 403
    assert client.get(reverse("report_download", args=[study.slug, "json"])).status_code == 403


def test_job_results_give_the_judges_to_a_lead_only(study, lead, world):
    (shown,) = JobResults(lead, study).shown([world["job"]])
    assert "judges" in shown.shown_result
    # a moderator promoted to reading job results (the lists are the leads' today): still none
    study.add_member(world["moderator"], Role.MODERATOR)
    (shown,) = JobResults(world["moderator"], study).shown([Job.objects.get(pk=world["job"].pk)])
    assert "judges" not in shown.shown_result
    assert "det-code-rollback@1" not in json.dumps(shown.shown_result)


def test_the_api_agreement_endpoint_is_the_leads_and_holds_the_judges(study, lead, world):
    from tests.factories import token_client

    response = token_client(lead).get(reverse("api-agreement", args=[study.slug]))
    assert response.status_code == 200 and "judges" in response.json()
    response = token_client(world["moderator"]).get(reverse("api-agreement", args=[study.slug]))
    assert response.status_code in (403, 404)
