"""The lead's conversation browser in Chromium, keyboard only: search, open a conversation,
and hostile conversation text (script tags, onerror, SVG, javascript: links) never runs on
either page; axe-core finds no serious or critical violation on them."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from annotation.models import Conversation, Kind, Role, Turn
from tests.browser.pages import log_in
from tests.factories import make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = (
    "<script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"
    "<svg onload='window.pwned = 3'></svg> [a link](javascript:window.pwned=4)"
)


def serious_violations(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']}: {v['help']}"
        for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical")
    ]


def test_a_lead_searches_and_reads_a_conversation_with_the_keyboard(
    browser, live_server, study, alice
):
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    group = make_group(study, "G1", [alice])
    make_conversation(study, "plain", n_turns=2, group=group)
    hostile = make_conversation(study, "hostile", n_turns=2, group=group)
    Conversation.objects.filter(pk=hostile.pk).update(metadata={"model": "<svg onload=x()>"})
    Turn.objects.filter(conversation=hostile, index=2).update(
        user_text=f"needle {HOSTILE}",
        reply_text=HOSTILE,
        reply_parts=[{"type": "tool_call", "name": "<script>", "arguments": HOSTILE}],
    )
    context, page, errors = log_in(browser, live_server, "lead")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    page.goto(f"{live_server.url}/s/{study.slug}/lead/browse/")
    assert serious_violations(page) == []
    page.get_by_label("Text contains").focus()
    page.keyboard.type("needle")
    page.keyboard.press("Enter")
    page.wait_for_url("**/browse/?q=needle*")
    rows = page.locator("#results tbody tr[data-conversation-id]")
    assert rows.count() == 1
    assert "first match in turn 2" in rows.first.inner_text()

    # Tab to the result's link and follow it with Enter: it opens on the matching turn
    link = rows.first.get_by_role("link", name="hostile")
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "hostile":
            break
    assert link.evaluate("a => a === document.activeElement")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/lead/conversations/{hostile.pk}/#turn-2")
    assert page.locator("section.browse-card").count() == 2
    card = page.locator("#turn-2")
    assert "<script>window.pwned = 1</script>" in card.inner_text()  # shown as text
    card.locator("details.part summary").focus()
    page.keyboard.press("Enter")  # a folded tool call opens from the keyboard
    assert card.locator("details.part").evaluate("d => d.open")
    assert serious_violations(page) == []

    assert page.evaluate("window.pwned") is None
    assert page.locator("a[href^='javascript:']").count() == 0
    assert dialogs == [] and errors == []
    context.close()
