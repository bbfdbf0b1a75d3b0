"""A reply that rolls back an earlier fix, seen with the keyboard: turn 1 writes `mean`, turn 2
fixes its division by zero (and types it), turn 3 adds a docstring and drops the fix. On the
card and on the discussion page, d shows turn 3's code against turn 2's, the closest by the
rule (annotation/codediff.py: same language, most similar, here 57% against turn 1's 0%),
with the guard removed; the view's button switches to unified."""

from __future__ import annotations

import pytest

from annotation.models import Conversation, Turn
from tests.browser.pages import htmx_ready, log_in, open_card
from tests.factories import make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPLIES = [
    "Here is `mean`:\n\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```\n",
    "Fixed: an empty list no longer divides by zero.\n\n```python\n"
    "def mean(values: list[float]) -> float:\n    if not values:\n        return 0.0\n"
    "    return sum(values) / len(values)\n```\n",
    "With a docstring:\n\n```python\ndef mean(values: list[float]) -> float:\n"
    '    """The average of values."""\n    return sum(values) / len(values)\n```\n',
]
GUARD = ["if not values:", "return 0.0"]


@pytest.fixture
def rollback(study, alice):
    group = make_group(study, "A", [alice], moderator=make_user("moderator"))
    conversation = Conversation.objects.create(
        study=study, external_id="rollback", source_format="native", n_turns=3
    )
    Conversation.objects.filter(pk=conversation.pk).assign(group)
    users = ["Write mean()", "It crashes on []", "Add a docstring"]
    Turn.objects.bulk_create(
        Turn(conversation=conversation, index=i, user_text=u, reply_text=r)
        for i, (u, r) in enumerate(zip(users, REPLIES, strict=True), 1)
    )
    return conversation.turns.get(index=3)


def cells(page, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def check_the_rollback(page) -> None:
    """d shows the diff against turn 2, guard removed, docstring added; then unified."""
    htmx_ready(page, "[data-diff]")
    page.evaluate("document.activeElement?.blur()")
    page.keyboard.press("d")
    page.wait_for_selector("#diff-panel table.diff.split")
    assert "compared with turn 2" in page.inner_text("#diff-panel h3")
    removed = cells(page, "table.split td.del")
    assert [r.removeprefix("− ").strip() for r in removed] == GUARD
    added = cells(page, "table.split td.add")
    assert [a.removeprefix("+ ").strip() for a in added] == ['"""The average of values."""']
    # the side-by-side rows keep their line numbers: the guard was lines 2 and 3 of turn 2
    assert cells(page, "table.split tr.delete td.ln")[0] == "3"

    switch = page.get_by_role("button", name="Unified view")
    switch.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#diff-panel table.diff.unified")
    assert cells(page, "table.unified tr.hunk") == ["@@ -1,4 +1,3 @@"]
    removed = cells(page, "table.unified td.del")
    assert [r.removeprefix("− ").strip() for r in removed] == GUARD
    assert page.get_by_role("button", name="Side-by-side view").is_visible()

    page.evaluate("document.activeElement?.blur()")
    page.keyboard.press("d")  # folds it away, and back, without asking the server again
    assert page.locator("#diff-panel").is_hidden()
    page.keyboard.press("d")
    assert page.locator("#diff-panel table.diff.unified").is_visible()


def test_d_on_the_card_shows_the_fix_rolled_back(browser, live_server, alice, rollback):
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, rollback)
    check_the_rollback(page)
    assert errors == []
    context.close()


def test_d_on_the_discussion_page_shows_the_fix_rolled_back(browser, live_server, rollback):
    context, page, errors = log_in(browser, live_server, "moderator")
    page.goto(
        f"{live_server.url}/s/{rollback.conversation.study.slug}/cards/{rollback.pk}/discussion/"
    )
    page.wait_for_load_state("load")
    check_the_rollback(page)
    assert errors == []
    context.close()


def test_the_first_turn_and_a_reply_without_code_have_no_diff_button(
    browser, live_server, alice, rollback
):
    Turn.objects.filter(pk=rollback.pk).update(reply_text="Done, nothing to change.")
    context, page, _ = log_in(browser, live_server, "alice")
    for turn in (rollback.conversation.turns.get(index=1), rollback):
        open_card(page, live_server.url, turn)
        assert page.locator("[data-diff]").count() == 0
        page.keyboard.press("d")  # nothing happens, nothing breaks
        assert page.locator("#diff-panel").count() == 0
    context.close()
