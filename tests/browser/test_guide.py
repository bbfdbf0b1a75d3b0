"""The guideline panel: ? (or its button) opens each type's definition and example, with the
focus in it; Escape, ? or Close closes it and gives the focus back. On the card and on the
discussion page; ? typed in a text box is just a character."""

from __future__ import annotations

import pytest

from tests.browser.pages import htmx_ready, open_card
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def turns(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    return list(make_conversation(study, "c1", n_turns=2, group=group).turns.order_by("index"))


def focus_in_guide(page) -> bool:
    return page.evaluate("!!document.activeElement?.closest('#guide')")


def test_question_mark_opens_the_guideline_and_escape_closes_it(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    guide = alice_page.locator("#guide")
    assert not guide.is_visible()

    alice_page.keyboard.press("?")

    assert guide.is_visible()
    assert focus_in_guide(alice_page)
    text = guide.inner_text()
    assert "Ambiguous Instruction" in text and "admits several interpretations" in text
    assert 'asks for "a streaming API client"' in text  # the example
    alice_page.keyboard.press("Escape")
    assert not guide.is_visible()


def test_the_button_opens_it_and_the_focus_comes_back_to_the_button(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    button = alice_page.locator("#card [data-guide-open]")

    button.click()
    assert alice_page.locator("#guide").is_visible() and focus_in_guide(alice_page)
    assert button.get_attribute("aria-expanded") == "true"
    alice_page.keyboard.press("?")  # ? closes it too

    assert not alice_page.locator("#guide").is_visible()
    assert alice_page.evaluate("document.activeElement.matches('#card [data-guide-open]')")


def test_question_mark_in_the_note_is_a_character(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    alice_page.click("#card textarea[name=note]")

    alice_page.keyboard.type("why?")

    assert alice_page.input_value("#card textarea[name=note]") == "why?"
    assert not alice_page.locator("#guide").is_visible()


def test_the_discussion_page_has_it_too(live_server, alice_page, alice, bob, turns):
    label(turns[1], alice, "code_rollback")
    label(turns[1], bob, "must_do_omission")
    alice_page.goto(f"{live_server.url}/s/s1/cards/{turns[1].pk}/discussion/")
    htmx_ready(alice_page, "#revise")

    alice_page.keyboard.press("?")
    assert alice_page.locator("#guide").is_visible() and focus_in_guide(alice_page)
    assert "Code Rollback" in alice_page.locator("#guide").inner_text()
    alice_page.get_by_role("button", name="Close").click()

    assert not alice_page.locator("#guide").is_visible()
