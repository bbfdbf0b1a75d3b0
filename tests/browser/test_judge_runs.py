"""Machine judges in Chromium (issue 22), against a local stub of an OpenAI-compatible
endpoint (http.server in a thread): the lead asks the report page's Machine judges panel
for a dry run's estimate, then starts an `llm-annotate` run, watches its progress come to
done and reads the run on the report; an annotator of the same group finds nothing of it
on any page she can open. Once the agreement is computed, the lead reads the judge's scores
against the gold with their intervals, the annotators' own beside them (issue 22 point 5),
and the annotator, whose cards are agreed, reads a report with nothing of the judge."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import JudgeRun
from annotation.tasks import run_agreement, run_judge
from tests.browser.pages import htmx_ready
from tests.browser.test_annotate_flow import log_in as shared_log_in
from tests.factories import label, make_conversation, make_group
from tests.model_stub import StubServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUOTE = "please write function number"


def log_in(browser, live_server, username: str):
    """The shared log-in with a minute's patience per page (a busy machine)."""
    return shared_log_in(browser, live_server, username, timeout_ms=60_000)


def answer(body: dict) -> str:
    schema = body["response_format"]["json_schema"]["schema"]
    out = {axis: [] for axis in schema["properties"]}
    first = next(iter(out))
    out[first] = [{"type": "code_rollback", "score": 0.9, "quotes": [QUOTE]}]
    return json.dumps(out)


@pytest.fixture
def stub_endpoint(settings):
    with StubServer(answer) as stub:
        settings.CARDSORT_LLM_BASE_URL = stub.base_url
        settings.CARDSORT_LLM_MODEL = "stub-model"
        settings.CARDSORT_LLM_API_KEY = ""
        yield stub


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The judge job the panel starts: the test runs it (no worker here)."""
    jobs: list[int] = []
    monkeypatch.setattr(run_judge, "delay", jobs.append)
    monkeypatch.setattr(run_agreement, "delay", jobs.append)
    return jobs


def test_the_lead_runs_a_judge_and_the_annotator_sees_nothing_of_it(
    browser, live_server, study, lead, alice, bob, stub_endpoint, queued
):
    group = make_group(study, "g1", annotators=[alice, bob])
    turns = list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))
    # alice and bob agree on every card: the consensus is the gold the judge is scored against
    for who in (alice, bob):
        label(turns[0], who, "code_rollback", note=f"{who.username}-note")
        label(turns[1], who)
        label(turns[2], who, "ambiguous_instruction")

    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/report/")
    panel = page.locator("#judges")
    assert "No judge has run on this study yet" in panel.inner_text()
    panel.locator("#id_judge").select_option("llm-annotate")
    panel.locator("#id_group").select_option("g1")
    page.get_by_label("Dry run (estimate only)").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_function(
        "() => document.querySelector('#judges .judge-estimate')?.textContent"
        ".includes('about 3 calls')"
    )
    assert stub_endpoint.bodies == [] and queued == []
    assert "Planned" in page.locator("#judges tr[data-status='planned']").inner_text()

    page.get_by_label("Dry run (estimate only)").uncheck()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#judges tr[data-status='running']")
    htmx_ready(page, "#judges")
    (job_id,) = queued
    run_judge.apply(args=[job_id])  # as a worker would, while the panel polls
    page.wait_for_selector("#judges tr[data-status='done']")
    run = JudgeRun.objects.get()
    row = page.locator(f"#judge-run-{run.pk}").inner_text()
    assert run.user.username in row and "3 of 3 cards" in row
    assert "3 labelled" in row and "stub-model" in row
    assert len(stub_endpoint.bodies) == 3
    page.reload()
    assert run.user.username in page.locator("#judges").inner_text()

    # the agreement computed from the study page's jobs panel: the scores with intervals
    page.goto(f"{live_server.url}/s/{study.slug}/")
    page.get_by_role("button", name="Compute agreement").click()
    page.wait_for_function("() => document.body.innerText.includes('Agreement, round 1')")
    (_, agreement_job) = queued
    run_agreement.apply(args=[agreement_job])
    page.goto(f"{live_server.url}/s/{study.slug}/report/")
    scores = page.locator("#judges-gold")
    text = scores.inner_text()
    assert f"{run.judge}@{run.version} (run {run.pk})" in text
    assert "alice (annotator)" in text and "bob (annotator)" in text
    # every figure with its 95% interval: "[low, high]" beside the point estimate
    assert text.count("[") >= 3, text
    assert page.locator("#judges-gold svg").count() >= 1  # a precision-recall curve
    context.close()
    assert errors == []

    # alice, an annotator of the same group: nothing of the judge anywhere she can go
    context, page, errors = log_in(browser, live_server, "alice")
    slug = study.slug
    names = ["study", "queue", "my_cards", "discuss_queue", "report", "report_methods"]
    urls = [reverse(name, args=[slug]) for name in names]
    urls += [reverse(name, args=[slug, t.pk]) for t in turns for name in ("card", "discussion")]
    seen, shown = [], 0
    for url in urls:
        page.goto(live_server.url + url)
        html = page.content()
        shown += QUOTE in html  # the cards themselves do show
        for mark in (run.user.username, "llm-annotate", "Machine judges", "stub-model"):
            if mark in html:
                seen.append((url, mark))
    assert seen == []
    assert shown >= 3
    context.close()
    assert errors == []
