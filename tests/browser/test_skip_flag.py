"""Skip (s) and flag for later (f) on the card, with the keyboard: the next card comes at
once, the skipped or flagged card comes back at the end of the queue, and a refused flag
keeps what was typed."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardSkip
from tests.browser.pages import card_id, htmx_ready, open_card, wait_for_card
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cards(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    return list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))


def test_s_skips_to_the_next_card_and_the_card_comes_back_last(live_server, alice_page, cards):
    page = alice_page
    open_card(page, live_server.url, cards[0])
    page.keyboard.press("s")
    wait_for_card(page, cards[1])
    assert CardSkip.objects.get().kind == "skip"
    assert page.url.endswith(f"/cards/{cards[1].pk}/")
    assert "it comes back at the end of your queue" in page.inner_text("#skip-flag [role=status]")
    # the two other cards, then the skipped one
    for turn in cards[1:]:
        page.keyboard.press("0")
        page.keyboard.press("Enter")
        wait_for_card(page, cards[2] if turn == cards[1] else cards[0])
    assert "You skipped this card" in page.inner_text("#skip-flag")
    assert not Annotation.objects.filter(turn=cards[0]).exists()


def test_f_opens_the_reason_box_and_ctrl_enter_flags(live_server, alice_page, alice, cards):
    page = alice_page
    open_card(page, live_server.url, cards[0])
    page.keyboard.press("f")
    box = page.locator("#flag-box textarea[name=reason]")
    assert page.locator("#flag-box").evaluate("d => d.open")
    assert box.evaluate("el => el === document.activeElement")
    page.keyboard.type("Is a refusal a smell? s and f typed here are text")
    htmx_ready(page, "#flag-box form")
    page.keyboard.press("Control+Enter")
    wait_for_card(page, cards[1])
    flag = CardSkip.objects.get()
    assert (flag.kind, flag.reason, flag.turn_id, flag.annotator) == (
        "flag",
        "Is a refusal a smell? s and f typed here are text",
        cards[0].pk,
        alice,
    )


def test_escape_closes_the_reason_box(live_server, alice_page, cards):
    page = alice_page
    open_card(page, live_server.url, cards[0])
    page.keyboard.press("f")
    page.keyboard.type("half a thought")
    page.keyboard.press("Escape")
    assert not page.locator("#flag-box").evaluate("d => d.open")
    assert not CardSkip.objects.exists()
    # the keys work on the card again: s skips
    page.keyboard.press("s")
    wait_for_card(page, cards[1])


def test_a_flag_without_a_reason_says_why_and_keeps_the_box_open(live_server, alice_page, cards):
    page = alice_page
    open_card(page, live_server.url, cards[0])
    page.keyboard.press("f")
    page.keyboard.type("   ")
    htmx_ready(page, "#flag-box form")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#flag-box [role=alert]")
    assert "Not flagged: say why you flag this card" in page.inner_text("#flag-box")
    assert page.locator("#flag-box").evaluate("d => d.open")
    assert card_id(page) == cards[0].pk
    # the box has the focus again: a reason typed now is sent
    page.keyboard.type("the reply is cut off")
    htmx_ready(page, "#flag-box form")
    page.keyboard.press("Control+Enter")
    wait_for_card(page, cards[1])
    assert CardSkip.objects.get().reason == "the reply is cut off"


def test_skip_with_unsaved_ticks_asks_first(live_server, alice_page, cards):
    page = alice_page
    open_card(page, live_server.url, cards[0])
    page.keyboard.press("1")
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.keyboard.press("s")
    page.wait_for_timeout(300)
    assert asked and "not saved" in asked[0]
    assert card_id(page) == cards[0].pk and not CardSkip.objects.exists()
