"""The agreement job from the study page's Jobs panel to the API, in eager mode."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.models import Job, JobKind, JobStatus, Role
from annotation.tasks import run_agreement
from tests.factories import AMBIGUOUS, label, make_conversation, make_study, make_user

pytestmark = pytest.mark.django_db


def start(client, study, round=1, htmx=False):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    url = reverse("job_agreement", args=[study.slug])
    return client.post(url, {"round": round}, **headers)


def without_time(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "computed_at"}


def test_it_computes_the_report_of_the_round_asked_for(
    client, study, lead, labelled, eager, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, study, round=2)
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.status, job.created_by) == (JobKind.AGREEMENT, JobStatus.DONE, lead)
    assert job.params == {"round": 2, "seed": 0, "n_boot": 1000}
    expected = compute_study_report(study, round=2, n_boot=1000, seed=0)
    assert without_time(job.result) == without_time(expected)
    assert job.percent == 100 and job.heartbeat_at is not None


def test_the_panel_shows_the_result_and_says_when_it_is_stale(
    client, study, lead, alice, labelled, eager, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, study, htmx=True)
    html = response.content.decode()
    # the htmx answer is the panel with the new job, as queued when the request ended
    assert 'id="jobs-panel"' in html and "Agreement, round 1" in html
    job = Job.objects.get()
    detail = reverse("job_detail", args=[study.slug, job.pk])
    page = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "6 cards, 4 annotators" in page
    # the staleness check (a scan of the study's labels) is asked for once the page shows
    assert f'hx-get="{detail}" hx-trigger="load"' in page
    partial = client.get(detail, HTTP_HX_REQUEST="true").content.decode()
    assert "6 cards, 4 annotators" in partial and "stale" not in partial
    assert "hx-trigger" not in partial  # asked once, not polled

    label(labelled["t"][3], alice, AMBIGUOUS)  # a label revised after the job ran
    partial = client.get(detail, HTTP_HX_REQUEST="true").content.decode()
    assert "stale: annotations changed since" in partial


def test_a_running_job_polls_and_a_finished_one_stops(client, study, lead, settings):
    client.force_login(lead)
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    job.start(total=3)
    job.set_progress(1, "smell: agreement statistics")
    url = reverse("job_detail", args=[study.slug, job.pk])
    html = client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in html and "33%" in html and "smell: agreement" in html
    job.fail("ValueError: boom")
    html = client.get(url).content.decode()
    assert "hx-trigger" not in html and "ValueError: boom" in html


def test_a_job_nobody_picks_up_says_it_waits_for_a_worker(client, study, lead, settings):
    settings.JOB_WAITING_WARNING_SECONDS = 0
    client.force_login(lead)
    job = Job.objects.create(study=study, kind=JobKind.EXPORT, params={"format": "csv"})
    html = client.get(reverse("job_detail", args=[study.slug, job.pk])).content.decode()
    assert "Waiting for a worker" in html


def test_only_leads_start_jobs_and_see_them(client, study, alice, labelled, eager):
    client.force_login(alice)  # a member: told "Leads only"
    assert start(client, study).status_code == 403
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    assert client.get(reverse("job_detail", args=[study.slug, job.pk])).status_code == 403
    page = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "Compute agreement" not in page
    assert not Job.objects.exclude(pk=job.pk).exists()


def test_a_bad_round_starts_nothing(client, study, lead, eager):
    client.force_login(lead)
    response = start(client, study, round=9)
    assert response.status_code == 302
    assert not Job.objects.exists()


def test_a_failure_shows_its_error(client, study, lead, labelled, eager, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("row 3: field 'labels' has unknown label code 'x'")

    monkeypatch.setattr("annotation.agreement.data.compute_study_report", broken)
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    run_agreement(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "ValueError: row 3: field 'labels' has unknown label code 'x'"


def test_a_redelivered_message_for_a_finished_job_does_nothing(study, labelled, monkeypatch):
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    run_agreement(job.pk)
    job.refresh_from_db()
    first = job.result

    def must_not_run(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr("annotation.agreement.data.compute_study_report", must_not_run)
    run_agreement(job.pk)  # acks_late redelivers the message after the job ended
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.DONE, first)
    failed = Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.FAILED)
    run_agreement(failed.pk)
    failed.refresh_from_db()
    assert failed.status == JobStatus.FAILED and failed.result == {}


# -- API ------------------------------------------------------------------------------------


def test_the_api_gives_the_latest_finished_result_to_leads(client, study, lead, labelled):
    url = reverse("api-agreement", args=[study.slug])
    client.force_login(lead)
    assert client.get(url).status_code == 404  # nothing computed yet
    for round in (1, 2):
        job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": round})
        run_agreement(job.pk)
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})  # queued
    body = client.get(url).json()
    assert body["round"] == 2 and body["axes"]["smell"]["report"]["n_annotations"] == 3
    assert client.get(url, {"round": 1}).json()["round"] == 1
    assert client.get(url, {"round": 3}).status_code == 404
    assert client.get(url, {"round": "x"}).status_code == 400


def test_the_api_hides_the_result_from_non_leads(client, study, alice, labelled):
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    run_agreement(job.pk)
    client.force_login(alice)
    assert client.get(reverse("api-agreement", args=[study.slug])).status_code == 404
    other = make_study("other")
    other.add_member(make_user("erin"), Role.LEAD)
    client.force_login(make_user("erin"))
    assert client.get(reverse("api-agreement", args=[study.slug])).status_code == 404


def test_the_study_page_costs_the_same_queries_as_jobs_and_labels_pile_up(
    client, study, lead, alice, bob, labelled
):
    job = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params={"round": 1})
    run_agreement(job.pk)
    client.force_login(lead)
    url = reverse("study", args=[study.slug])
    with CaptureQueriesContext(connection) as small:
        client.get(url)
    for i in range(5):
        for turn in make_conversation(study, f"m{i}", 2, group=labelled["groups"][0]).turns.all():
            label(turn, alice, AMBIGUOUS)
            label(turn, bob)
        Job.objects.create(study=study, kind=JobKind.EXPORT, params={"format": "csv"})
        run_agreement(Job.objects.create(study=study, kind=JobKind.AGREEMENT).pk)
    with CaptureQueriesContext(connection) as big:
        client.get(url)
    assert len(big) == len(small)
