"""Navigation seen in the browser: the study page's jobs list filtered and paged in place
(htmx), and the moderator's way on to the next escalated card after a decision."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import CardState, Job, JobKind, JobStatus
from tests.browser.pages import htmx_ready, key_of, log_in
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_jobs_list_filters_and_pages_in_place(browser, live_server, study, lead):
    now = timezone.now()
    for i in range(24):
        kind = JobKind.EXPORT if i % 2 else JobKind.AGREEMENT
        Job.objects.create(
            study=study,
            kind=kind,
            status=JobStatus.FAILED,
            error=f"error-{i}",
            params={"round": 1, "format": "csv"},
            created_at=now - timedelta(minutes=100 - i),
        )
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/")
    htmx_ready(page, "#jobs-panel form.jobs-filter")
    page.evaluate("window.__marker = 1")
    page.select_option("#jobs-panel select[name=kind]", "export")
    page.click("#jobs-panel form.jobs-filter button")
    page.wait_for_selector("#jobs-panel .jobs-pages:has-text('page 1 of 2')")
    assert page.locator("#jobs-list .job").count() == 10
    assert "error-23" in page.inner_text("#jobs-list")  # the newest export first
    htmx_ready(page, "#jobs-panel .jobs-pages a")
    page.click("#jobs-panel .jobs-pages a:has-text('older')")
    page.wait_for_selector("#jobs-panel .jobs-pages:has-text('page 2 of 2')")
    assert page.locator("#jobs-list .job").count() == 2
    assert "error-1" in page.inner_text("#jobs-list") and "error-2" not in page.inner_text(
        "#jobs-list"
    )
    assert page.evaluate("window.__marker") == 1  # swapped in place, no page load
    assert errors == []
    context.close()


def test_after_a_decision_the_moderator_goes_on_to_the_next_escalated_card(
    browser, live_server, study, alice, bob
):
    study.discussion_rounds = 0
    study.save()
    group = make_group(study, "g", [alice, bob], moderator=make_user("moderator"))
    turns = list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))
    for i, t in enumerate(turns[:2]):
        label(t, alice, "code_rollback")
        label(t, bob)
        CardState.objects.filter(turn=t).update(updated_at=timezone.now() - timedelta(hours=5 - i))
    context, page, errors = log_in(browser, live_server, "moderator")
    page.goto(f"{live_server.url}/s/{study.slug}/moderate/")
    page.click("text=Next escalated card (2 left)")
    page.wait_for_selector("#decide")
    assert f"/cards/{turns[0].pk}/discussion/" in page.url
    htmx_ready(page, "#decide")
    page.fill("#decide textarea[name=rationale]", "It rolls back the fix.")
    page.evaluate("document.activeElement?.blur()")
    page.keyboard.press(key_of(page, "code_rollback", "#decide"))
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#consensus")
    page.click("text=Next escalated card (1 left)")
    page.wait_for_selector("#decide")
    assert f"/cards/{turns[1].pk}/discussion/" in page.url
    assert errors == []
    context.close()
