"""A card whose message is 5 MB on one line opens and takes labels at once (the page shows
the first CARDSORT_MESSAGE_DISPLAY_LIMIT characters, the full text a click away as plain
text); a card deep in a long conversation opens its earlier turns a window at a time,
without sending megabytes (annotation/messages.py)."""

from __future__ import annotations

import time

import pytest

from annotation.models import Annotation, Conversation, Turn
from tests.browser.pages import htmx_ready, open_card, submit_with_enter
from tests.browser.test_annotate_flow import log_in as shared_log_in
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# 5 MB on one line: a minified bundle or a base64 blob pasted into a chat
HUGE = ("eyJhIjoxLCJiIjpbMiwzXX0=" * 220_000)[:5_000_000] + " THE-END"
# the longest text node of the page: Chromium lays one out in time proportional to it
LONGEST_TEXT_NODE = """() => {
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let longest = 0;
  while (walk.nextNode()) longest = Math.max(longest, walk.currentNode.length);
  return longest;
}"""


def log_in(browser, live_server, username: str):
    """The shared log-in with a minute's patience per page (a busy machine)."""
    return shared_log_in(browser, live_server, username, timeout_ms=60_000)


@pytest.fixture
def huge_card(study, alice):
    group = make_group(study, "g1", [alice])
    conv = make_conversation(study, "huge", n_turns=2, group=group)
    conv.turns.filter(index=1).update(user_text=HUGE, reply_text=HUGE)
    return conv.turns.get(index=1)


def test_a_5_mb_single_line_card_opens_and_takes_labels(live_server, browser, alice, huge_card):
    assert len(Turn.objects.get(pk=huge_card.pk).user_text) == len(HUGE)  # stored whole
    _context, page, errors = log_in(browser, live_server, "alice")
    started = time.monotonic()
    open_card(page, live_server.url, huge_card)
    # what made it slow, whatever the machine's load: a text node of 5,000,008 characters
    # (10.8 s of Chromium's layout); now the shown 200,000 at most
    assert page.evaluate(LONGEST_TEXT_NODE) <= 200_000
    page.keyboard.press("0")  # no smell
    submit_with_enter(page)
    took = time.monotonic() - started
    assert Annotation.objects.filter(turn=huge_card, annotator=alice).exists()
    assert took < 30, f"{took:.1f} s to open the card and label it"
    assert errors == []


def test_the_full_text_is_one_click_away_as_plain_text(live_server, browser, alice, huge_card):
    _context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, huge_card)
    notice = page.locator("#card .message.user .message-cut")
    assert "Shown: the first 200,000 of 5,000,008 characters." in notice.inner_text()
    assert "THE-END" not in page.inner_text("#card .message.user")
    started = time.monotonic()
    with page.expect_response(lambda r: "/text/1/user/" in r.url) as answer:
        notice.get_by_role("link", name="Full text (plain)").click()
    assert answer.value.headers["content-type"] == "text/plain; charset=utf-8"
    page.wait_for_load_state("load")
    assert page.evaluate("document.body.innerText.endsWith('THE-END')")
    # one layout of 5 MB by the browser's own text viewer: about 5 s on an idle machine
    assert time.monotonic() - started < 45
    assert errors == []


@pytest.fixture
def deep_card(study, alice):
    """Turn 3,000 of a conversation whose every turn is about 1 KB."""
    group = make_group(study, "g1", [alice])
    conv = make_conversation(study, "deep", n_turns=1, group=group)
    Turn.objects.bulk_create(
        Turn(
            conversation=conv,
            index=i,
            user_text=f"question {i} " + "q" * 500,
            reply_text=f"answer {i} " + "a" * 500,
        )  # fmt: skip
        for i in range(2, 3001)
    )
    Conversation.objects.filter(pk=conv.pk).update(n_turns=3000)
    return conv.turns.get(index=3000)


def test_a_deep_card_opens_its_context_a_window_at_a_time(live_server, alice_page, deep_card):
    open_card(alice_page, live_server.url, deep_card)
    htmx_ready(alice_page, "#card [data-context]")
    with alice_page.expect_response(lambda r: "/context/" in r.url) as answer:
        alice_page.keyboard.press("c")
    size = len(answer.value.body())
    assert size < 60_000, size  # before: all 2,999 earlier turns at once
    turns = "#context .context-turn"
    alice_page.wait_for_function(f"document.querySelectorAll('{turns}').length === 20")
    assert alice_page.locator(turns).first.inner_text().startswith("Turn 2980 of 3000")
    with alice_page.expect_response(lambda r: "before=2980" in r.url) as answer:
        alice_page.get_by_role("button", name="Show earlier turns (2979 more)").click()
    assert len(answer.value.body()) < 60_000
    alice_page.wait_for_function(f"document.querySelectorAll('{turns}').length === 40")
    assert alice_page.locator(turns).first.inner_text().startswith("Turn 2960 of 3000")
    # c hides and shows them all again, without asking the server
    alice_page.keyboard.press("c")
    assert alice_page.locator("#context-turns").is_hidden()
    alice_page.keyboard.press("c")
    alice_page.wait_for_function(f"document.querySelectorAll('{turns}').length === 40")
    assert alice_page.locator("#context-turns").is_visible()
