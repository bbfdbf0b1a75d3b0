"""base.html's one htmx policy, in headless Chromium: a refusal answered 422 (bad input) or 409
(someone was first) is swapped in like a success, so its message shows where the user acted;
no page script has to force it (labels.js no longer does)."""

from __future__ import annotations

import pytest

from annotation.models import Kind, Proposal, Role
from tests.browser.pages import log_in
from tests.factories import make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_422_shows_its_message_in_the_box(browser, live_server, study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    context, page, _ = log_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/s/{study.slug}/cards/{turn.pk}/")

    page.get_by_text("None fits? Propose a new type").click()
    page.locator('#propose input[name="name"]').fill("New type")
    page.locator('#propose textarea[name="definition"]').fill("What it means.")
    # blanks pass the browser's `required` check; the server strips them: no reason
    page.locator('#propose textarea[name="reason"]').fill("   ")
    with page.expect_response(lambda r: "/propose/" in r.url) as answer:
        page.locator('#propose button[type="submit"]').click()
    assert answer.value.status == 422
    page.wait_for_selector("#propose .errorlist")
    assert "Say why none of the existing types fits." in page.locator("#propose").inner_text()
    assert not Proposal.objects.exists()
    context.close()


def test_a_409_shows_who_was_first(browser, live_server, study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    other = make_user("expert2")
    study.add_member(other, Role.LEAD, Kind.EXPERT)
    proposal = Proposal.propose(
        study=study, turn=turn, proposer=alice, name="New", definition="d", reason="r"
    )
    context, page, _ = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/proposals/")
    proposal.reject(other, reason="covered already")  # meanwhile, in another tab

    reject = page.locator(f"#proposal-{proposal.pk} form").filter(
        has=page.locator('input[name="action"][value="reject"]')
    )
    reject.locator('input[name="reason"]').fill("no")
    with page.expect_response(lambda r: "/decide/" in r.url) as answer:
        reject.get_by_role("button", name="Reject").click()
    assert answer.value.status == 409
    page.wait_for_selector('[role="alert"]')
    assert "already rejected" in page.locator('[role="alert"]').first.inner_text()
    context.close()
