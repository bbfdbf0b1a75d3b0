"""The lead's Splitting page in Chromium, against a local stub of an OpenAI-compatible
endpoint (http.server in a thread): the lead asks the model the study's way (temperature 1,
a seed, worked examples uploaded, apply when done), watches the job's progress come to its
summary, and finds the conversation split with its off-topic turn dropped. No serious
accessibility violation on the page."""

from __future__ import annotations

import json

import pytest

from annotation.models import Conversation, Job, SetAside, Turn
from annotation.tasks import run_split_proposals
from tests.browser.a11y import assert_no_serious_violations
from tests.browser.pages import htmx_ready, log_in
from tests.factories import make_conversation
from tests.model_stub import StubServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXAMPLE = {
    "turns": [
        {"user": "sort a list", "assistant": "sorted()"},
        {"user": "SQL?", "assistant": "SELECT"},
    ],
    "splits": [{"before_turn": 2, "reason": "a new task"}],
}


def answer(body) -> dict:
    """The conversation whose turn 1 says "mixed" changes topic at turn 4 and has an
    off-topic turn 2; any other is one topic."""
    mixed = "User: mixed" in body["messages"][-1]["content"]
    return {
        "splits": [{"before_turn": 4, "reason": "now a SQL question"}] if mixed else [],
        "drop_turns": [2] if mixed else [],
    }


@pytest.fixture
def stub_endpoint(settings):
    with StubServer(lambda body: json.dumps(answer(body))) as stub:
        settings.CARDSORT_LLM_BASE_URL = stub.base_url
        settings.CARDSORT_LLM_MODEL = "stub-model"
        settings.CARDSORT_LLM_API_KEY = ""
        yield stub


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The splitting job the page starts: the test runs it (no worker here)."""
    jobs: list[int] = []
    monkeypatch.setattr(run_split_proposals, "delay", jobs.append)
    return jobs


def test_the_lead_splits_the_study_the_studys_way_and_watches_it(
    browser, live_server, study, lead, stub_endpoint, queued, tmp_path
):
    mixed = make_conversation(study, "mixed", n_turns=6)
    Turn.objects.filter(conversation=mixed, index=1).update(user_text="mixed: sort a list")
    make_conversation(study, "whole", n_turns=3)
    examples = tmp_path / "examples.jsonl"
    examples.write_text(json.dumps(EXAMPLE) + "\n", encoding="utf-8")

    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/lead/splitting/")
    assert page.locator('[data-count="askable"]').inner_text().startswith("2 ")
    assert_no_serious_violations(page, "the Splitting page")
    page.get_by_label("Temperature").fill("1")
    page.get_by_label("Seed").fill("7")
    page.get_by_label("Worked examples (JSONL)").set_input_files(str(examples))
    page.get_by_label("Apply the proposals when done").check()
    page.get_by_role("button", name="Ask the model").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/lead/splitting/")
    job = page.locator(".job").first
    assert "Splitting the study's conversations, then applying the proposals" in job.inner_text()
    htmx_ready(page, "#split-jobs .job")

    (job_id,) = queued
    run_split_proposals.apply(args=[job_id])  # as a worker would, while the page polls
    assert Job.objects.get(pk=job_id).status == "done"
    page.wait_for_function(
        "() => document.querySelector('#split-jobs .job .summary')?.textContent"
        ".includes('split 1 conversation into 2 parts, 1 turn dropped, 0 refused')"
    )
    said = page.locator("#split-jobs .split-request").inner_text()
    assert "Model stub-model at 127.0.0.1, temperature 1.0, seed 7" in said
    assert "1 worked example" in said

    # what the stub was asked: the study's way
    assert len(stub_endpoint.bodies) == 2
    for body in stub_endpoint.bodies:
        assert body["path"] == "/v1/chat/completions"
        assert body["temperature"] == 1.0 and body["seed"] == 7
        assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
        assert body["response_format"]["type"] == "json_schema"

    page.reload()
    assert page.locator('[data-count="split"]').inner_text() == "1 conversation into 2 parts"
    assert page.locator('[data-count="dropped"]').inner_text() == "1"
    mixed.refresh_from_db()
    assert mixed.set_aside == SetAside.SPLIT
    page.goto(f"{live_server.url}/s/{study.slug}/lead/conversations/{mixed.pk}/")
    assert page.locator("#split-parts").inner_text().splitlines() == [
        "mixed#1: turns 1, 3",
        "mixed#2: turns 4-6",
    ]
    assert "Dropped by the split" in page.locator("#turn-2").inner_text()
    assert Conversation.objects.get(external_id="mixed#1").n_turns == 2
    context.close()
    assert errors == []
