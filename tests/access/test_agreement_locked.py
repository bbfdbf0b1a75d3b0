"""The agreement results count every round-1 label. Someone who annotates a card still in
round 1 on which others have labelled could read those labels off a pair's kappa or its
confusion heatmap, so the report page, its downloads, the API's agreement and the Jobs
panel's summary stay closed to them until round 1 is over there; a lead who does not
annotate sees them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Annotation, Role
from tests.factories import make_conversation, make_group, make_user
from tests.report.helpers import make_report_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_with_a_lead(study):
    """Group A: alice, bob and lena, a lead who annotates; alice and bob differ on card 1,
    lena has not labelled it. Another lead, olga, annotates nothing."""
    alice, bob, lena, olga = (make_user(n) for n in ("alice", "bob", "lena", "olga"))
    group = make_group(study, "A", [alice, bob, lena])
    study.add_member(olga, Role.LEAD)
    study.memberships.filter(user=lena).update(role=Role.LEAD)
    turn = make_conversation(study, "c1", n_turns=2, group=group).turns.first()
    types = study.taxonomy_version.types_by_code()
    for user, code in ((alice, "code_rollback"), (bob, "must_do_omission")):
        Annotation.submit(turn=turn, group=group, annotator=user, types=[types[code]])
    make_report_job(study, n_boot=50)
    return {"group": group, "turn": turn, "lena": lena, "olga": olga, "types": types}


def _urls(study) -> list[str]:
    return [
        reverse("report", args=[study.slug]),
        reverse("report_download", args=[study.slug, "json"]),
        reverse("api-agreement", args=[study.slug]),
    ]


def test_a_lead_who_annotates_an_open_card_others_labelled_gets_no_agreement(
    client, study, three_with_a_lead
):
    client.force_login(three_with_a_lead["lena"])
    for url in _urls(study):
        r = client.get(url)
        assert r.status_code == 403, url
        assert "code_rollback" not in r.content.decode()
    panel = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "once round 1 is over on those cards" in panel
    assert "mean Cohen's kappa" not in panel


def test_the_results_open_once_the_lead_has_labelled_and_round_1_is_over(
    client, study, three_with_a_lead
):
    w = three_with_a_lead
    lena = w["lena"]
    Annotation.submit(turn=w["turn"], group=w["group"], annotator=lena, types=[])
    client.force_login(lena)
    for url in _urls(study):
        assert client.get(url).status_code == 200, url


def test_a_lead_who_does_not_annotate_sees_the_agreement(client, study, three_with_a_lead):
    client.force_login(three_with_a_lead["olga"])
    for url in _urls(study):
        assert client.get(url).status_code == 200, url
    panel = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "mean Cohen's kappa" in panel


# -- every route to an agreement job's result (issue 24, point 1) -----------------------------


def _job_routes(study) -> list[tuple[str, dict]]:
    """The API's jobs list and job, and the job's page and partial (the same job)."""
    job = study.jobs.get(kind="agreement")
    return [
        (reverse("api-jobs", args=[study.slug]), {}),
        (reverse("api-job", args=[study.slug, job.pk]), {}),
        (reverse("job_detail", args=[study.slug, job.pk]), {}),
        (reverse("job_detail", args=[study.slug, job.pk]), {"HTTP_HX_REQUEST": "true"}),
        (reverse("job_list", args=[study.slug]), {"HTTP_HX_REQUEST": "true"}),
    ]


def test_a_lead_who_annotates_an_open_card_gets_no_agreement_job_result(
    client, study, three_with_a_lead
):
    """The confusion of alice and bob on card 1 (code_rollback against must_do_omission) is
    in the job's result: the jobs API withholds it as the agreement endpoint does, and says
    why."""
    client.force_login(three_with_a_lead["lena"])
    for url, headers in _job_routes(study):
        r = client.get(url, **headers)
        body = r.content.decode()
        assert r.status_code == 200, url
        assert "code_rollback" not in body and "confusion" not in body, url
        assert "mean Cohen's kappa" not in body, url
        assert "once round 1 is over on those cards" in body, url
    detail = client.get(_job_routes(study)[1][0]).json()
    assert detail["result"] is None
    assert detail["result_withheld"].startswith("You annotate 1 card still in round 1")
    listed = client.get(_job_routes(study)[0][0]).json()["results"]
    assert [(j["kind"], j["result"]) for j in listed] == [("agreement", None)]


def test_a_lead_who_does_not_annotate_gets_the_agreement_job_result(
    client, study, three_with_a_lead
):
    client.force_login(three_with_a_lead["olga"])
    for url, headers in _job_routes(study):
        body = client.get(url, **headers).content.decode()
        assert "once round 1 is over" not in body, url
    detail = client.get(_job_routes(study)[1][0]).json()
    assert detail["result_withheld"] == ""
    confusion = detail["result"]["axes"]["smell"]["extras"]["confusion"]
    assert list(confusion) == ["alice|bob"]


def test_the_jobs_api_opens_once_round_1_is_over(client, study, three_with_a_lead):
    w = three_with_a_lead
    Annotation.submit(turn=w["turn"], group=w["group"], annotator=w["lena"], types=[])
    client.force_login(w["lena"])
    detail = client.get(_job_routes(study)[1][0]).json()
    assert detail["result_withheld"] == ""
    assert "axes" in detail["result"]
