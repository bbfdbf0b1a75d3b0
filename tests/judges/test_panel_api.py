"""The report page's Machine judges panel and the API's judge-runs endpoint (issue 22, point
4): a lead lists the runs, asks for a dry run's estimate and starts a run as a background
job; nobody else reaches them."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Job, JobKind, JudgeRun, JudgeRunStatus
from tests.factories import HTMX, make_conversation, make_group, make_user, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study, lead, alice, moderator):
    group = make_group(study, "g1", annotators=[alice], moderator=moderator)
    make_conversation(study, "c1", n_turns=2, group=group)
    return group


@pytest.fixture
def run_jobs(settings, django_capture_on_commit_callbacks):
    """Jobs run as they are queued (the worker eager, the commit's callbacks run)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return lambda: django_capture_on_commit_callbacks(execute=True)


def answer(body: dict) -> str:
    schema = body["response_format"]["json_schema"]["schema"]
    axes = list(schema["properties"])
    return json.dumps({axis: [] for axis in axes} | {axes[0]: [
        {"type": "code_rollback", "score": 0.9, "quotes": []}]})  # fmt: skip


def lead_client(lead) -> Client:
    client = Client()
    client.force_login(lead)
    return client


def test_the_lead_gets_an_estimate_then_starts_a_run_from_the_panel(
    study, lead, world, fake_model, run_jobs
):
    fake_model.answer = answer
    client = lead_client(lead)
    url = reverse("judge_run_start", args=["s1"])
    form = {"judge": "llm-annotate", "group": "g1", "threshold": "0.5", "seed": "0"}

    dry = client.post(url, {**form, "dry_run": "on"}, **HTMX)

    assert dry.status_code == 200
    assert "about 2 calls" in dry.content.decode() and fake_model.requests == []
    assert JudgeRun.objects.get().status == JudgeRunStatus.PLANNED

    with run_jobs():
        started = client.post(url, form, **HTMX)

    assert started.status_code == 200
    run = JudgeRun.objects.get()
    assert run.status == JudgeRunStatus.DONE and len(fake_model.requests) == 2
    job = Job.objects.get(kind=JobKind.JUDGE)
    assert job.status == "done" and job.params == {"run": run.pk, "runs": 1}
    page = client.get(reverse("report", args=["s1"])).content.decode()
    assert "Machine judges" in page and run.user.username in page
    assert f'id="judge-run-{run.pk}" data-status="done"' in page


def test_a_refused_run_says_why_on_the_panel(study, lead, world, fake_model):
    response = lead_client(lead).post(
        reverse("judge_run_start", args=["s1"]),
        {"judge": "llm-annotate", "group": "g1", "threshold": "0.5", "sample": "5"},
        **HTMX,
    )
    assert response.status_code == 422
    assert "5 conversations: group &#x27;g1&#x27; has 1" in response.content.decode()
    assert not JudgeRun.objects.exists()


def test_the_panel_relabels_a_run_at_a_new_threshold(study, lead, world, fake_model, run_jobs):
    fake_model.answer = answer
    client = lead_client(lead)
    with run_jobs():
        client.post(
            reverse("judge_run_start", args=["s1"]),
            {"judge": "llm-annotate", "group": "g1", "threshold": "0.95"},
            **HTMX,
        )
    run = JudgeRun.objects.get()
    assert run.counts["labelled"] == 0

    response = client.post(
        reverse("judge_run_rethreshold", args=["s1", run.pk]), {"threshold": "0.5"}, **HTMX
    )

    assert "2 of 2 cards labelled" in response.content.decode()
    run.refresh_from_db()
    assert run.threshold == 0.5 and run.counts["labelled"] == 2


def test_only_leads_reach_the_panel(study, lead, alice, moderator, world, fake_model):
    stranger = make_user("stranger")
    urls = [
        ("get", reverse("judge_runs", args=["s1"])),
        ("post", reverse("judge_run_start", args=["s1"])),
    ]
    for user, expected in ((alice, 403), (moderator, 403), (stranger, 404), (lead, 200)):
        client = lead_client(user)
        for method, url in urls:
            data = {"judge": "llm-annotate", "group": "g1", "dry_run": "on", "threshold": "0.5"}
            status = getattr(client, method)(url, data if method == "post" else {}, **HTMX)
            assert status.status_code == expected, (user, url)
    assert Client().get(reverse("judge_runs", args=["s1"])).status_code == 302  # to log in
    # the report page shows the panel to the lead only
    assert (
        "Machine judges"
        not in lead_client(moderator).get(reverse("report", args=["s1"])).content.decode()
    )


def test_the_api_lists_and_starts_runs_for_leads_only(
    study, lead, alice, world, fake_model, run_jobs
):
    fake_model.answer = answer
    api = token_client(lead)
    url = "/api/studies/s1/judge-runs/"

    dry = api.post(url, {"judge": "llm-annotate", "dry_run": True}, format="json")
    assert dry.status_code == 201
    assert dry.json()["run"]["status"] == "planned"
    assert dry.json()["run"]["counts"]["estimate"]["calls"] == 2
    assert dry.json()["status_url"] is None and fake_model.requests == []

    with run_jobs():
        started = api.post(url, {"judge": "llm-annotate", "max_calls": 1}, format="json")
    assert started.status_code == 202
    assert started.json()["run"]["status"] == "running"  # as it was queued
    run = JudgeRun.objects.get()
    assert run.status == "stopped" and run.calls == 1  # its budget: one call of two
    assert started.json()["status_url"].endswith(f"/jobs/{started.json()['run']['job']}/")

    listed = api.get(url).json()
    assert [r["status"] for r in listed["results"]] == ["stopped"]
    assert listed["results"][0]["judge_user"].startswith("llm-fake-model@")

    refused = api.post(url, {"judge": "llm-validate", "run": "nope"}, format="json")
    assert refused.status_code == 400 and "no extraction run 'nope'" in refused.json()["run"][0]
    unknown = api.post(url, {"judge": "x", "colour": 1}, format="json")
    assert unknown.status_code == 400 and "colour" in unknown.json()

    assert token_client(alice).get(url).status_code == 404
    assert (
        token_client(alice).post(url, {"judge": "llm-annotate"}, format="json").status_code == 404
    )
