"""Browser Back after Enter: htmx swapped in the next card and pushed its URL. The card
Back returns to shows the labels stored on the server (not a snapshot taken before they
were ticked), and one key press toggles a type once, however often Back was pressed."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from tests.browser.pages import (
    box,
    checked_codes,
    key_of,
    log_in,
    open_card,
    submit_with_enter,
    wait_for_card,
)
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def press_toggles_once(page, code: str) -> None:
    """Press the type's key once: its box flips once (twice would leave it as it was)."""
    key = key_of(page, code)
    before = box(page, code).is_checked()
    page.keyboard.press(key)
    assert box(page, code).is_checked() is not before
    page.keyboard.press(key)  # and back, so the page has no unsaved change
    assert box(page, code).is_checked() is before


def test_it_shows_the_stored_labels_after_back_and_binds_the_keys_once(
    browser, live_server, study, alice, bob
):
    group = make_group(study, "g", [alice, bob])
    t1, t2, t3 = make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, t1)
    page.keyboard.press("1")
    page.keyboard.press("3")
    assert submit_with_enter(page) == t2.pk
    page.keyboard.press("4")
    assert submit_with_enter(page) == t3.pk
    stored = {a.turn_id: a.codes for a in Annotation.objects.filter(is_current=True)}
    assert stored == {
        t1.pk: {"ambiguous_instruction", "must_do_omission"},
        t2.pk: {"must_not_violation"},
    }

    page.go_back()
    wait_for_card(page, t2)
    assert checked_codes(page) == {"must_not_violation"}
    press_toggles_once(page, "code_rollback")

    page.go_back()
    wait_for_card(page, t1)
    assert checked_codes(page) == {"ambiguous_instruction", "must_do_omission"}
    press_toggles_once(page, "code_rollback")
    press_toggles_once(page, "ambiguous_instruction")

    # forward again, then Back once more: still the stored labels, still one toggle a key
    page.go_forward()
    wait_for_card(page, t2)
    assert checked_codes(page) == {"must_not_violation"}
    page.go_back()
    wait_for_card(page, t1)
    assert checked_codes(page) == {"ambiguous_instruction", "must_do_omission"}
    press_toggles_once(page, "must_do_omission")
    assert errors == []
    context.close()


def test_it_shows_the_stored_labels_after_leaving_the_card_and_coming_back(
    browser, live_server, study, alice, bob
):
    """Back after a full page load (the browser's back-forward cache, or its form
    restoration) shows what the server holds too."""
    group = make_group(study, "g", [alice, bob])
    t1, t2 = make_conversation(study, "c1", n_turns=2, group=group).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, t1)
    page.keyboard.press("2")
    assert submit_with_enter(page) == t2.pk
    page.get_by_role("link", name="My cards").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/cards/")
    page.go_back()
    wait_for_card(page, t2)
    page.go_back()
    wait_for_card(page, t1)
    assert checked_codes(page) == {"incomplete_instruction"}
    press_toggles_once(page, "code_rollback")
    assert errors == []
    context.close()
