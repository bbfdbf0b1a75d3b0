"""The side-by-side diff gives both sides equal room at a desktop width: an earlier turn with a
long line once took most of the table, leaving the new code a few characters wide at 1400 px
(issue 23). Long lines wrap inside their own side; the page does not scroll sideways."""

from __future__ import annotations

import pytest

from annotation.models import Conversation, Turn
from tests.browser.pages import htmx_ready, log_in, open_card
from tests.factories import make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "    return " + " + ".join(f"weight_{i} * value_{i}" for i in range(20))
REPLIES = [
    f"First:\n\n```python\ndef total(values):\n{LONG}\n```\n",
    "Shorter:\n\n```python\ndef total(values):\n    return sum(values)\n```\n",
]


@pytest.fixture
def long_line(study, alice):
    group = make_group(study, "A", [alice], moderator=make_user("moderator"))
    conversation = Conversation.objects.create(
        study=study, external_id="long", source_format="native", n_turns=2
    )
    Conversation.objects.filter(pk=conversation.pk).assign(group)
    Turn.objects.bulk_create(
        Turn(conversation=conversation, index=i, user_text="Write total()", reply_text=r)
        for i, r in enumerate(REPLIES, 1)
    )
    return conversation.turns.get(index=2)


def test_both_sides_of_the_split_diff_get_equal_room(browser, live_server, alice, long_line):
    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1400, "height": 900})
    open_card(page, live_server.url, long_line)
    htmx_ready(page, "[data-diff]")
    page.evaluate("document.activeElement?.blur()")
    page.keyboard.press("d")
    page.wait_for_selector("#diff-panel table.diff.split")

    row = "#diff-panel table.split tr.replace"
    old = page.locator(f"{row} td.code").nth(0).bounding_box()
    new = page.locator(f"{row} td.code").nth(1).bounding_box()
    assert abs(old["width"] - new["width"]) <= 0.1 * max(old["width"], new["width"]), (old, new)
    assert new["width"] > 200  # room for code, not a few characters
    # the long line stays whole (wrapped in its side), and the page does not scroll sideways
    assert "weight_19 * value_19" in page.locator(f"{row} td.code").nth(0).inner_text()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert errors == []
    context.close()
