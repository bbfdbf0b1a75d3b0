"""Alice logs in, tags three cards with the keyboard, one as "no smell"; the database holds
exactly those labels; Bob, in another browser context, does not see them."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-" + "secret"  # what tests/conftest.make_user gives everyone
NOTE = "alice-private-note: the reply ignores the earlier constraint"


def log_in(browser, live_server, username: str, timeout_ms: int = 10_000):
    """A new browser context logged in as `username`: (context, page, page errors).
    `timeout_ms`: each wait's patience (more where a first request is slow on a loaded
    machine)."""
    context = browser.new_context()
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill('input[name="username"]', username)
    page.fill('input[name="password"]', PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return context, page, errors


def card_id(page) -> int:
    return int(page.get_attribute("#card", "data-turn-id"))


def progress(page) -> tuple[int, int]:
    """(my cards done, my cards) from #progress, which reads "N of M" (words may follow)."""
    match = re.search(r"(\d+) of (\d+)", page.locator("#progress").inner_text())
    assert match, page.locator("#progress").inner_text()
    return int(match[1]), int(match[2])


def box(page, code: str):
    return page.locator(f'#card input[name="types"][value="{code}"]')


def submit_with_enter(page) -> int:
    """Press Enter and wait for htmx to swap in the next card; return its turn id."""
    before = card_id(page)
    page.evaluate("window.__marker = 1")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "old => document.querySelector('#card')?.dataset.turnId !== String(old)", arg=before
    )
    # a full page load would have dropped the marker: the card came in without one
    assert page.evaluate("window.__marker") == 1
    # a key pressed before htmx wires the new form would post it natively (a page load)
    page.wait_for_function(
        "() => document.querySelector('#card form')?.['htmx-internal-data']?.initHash"
    )
    return card_id(page)


def test_it_records_keyboard_labels_and_keeps_them_blind(browser, live_server, study, alice, bob):
    group = make_group(study, "Students A", annotators=[alice, bob])
    c1 = make_conversation(study, "c1", n_turns=2, group=group)
    c2 = make_conversation(study, "c2", n_turns=2, group=group)
    t1, t2 = c1.turns.order_by("index")
    t3, t4 = c2.turns.order_by("index")

    alice_context, page, alice_errors = log_in(browser, live_server, "alice")
    assert page.locator(f'a[href="/s/{study.slug}/"]').count() == 1

    page.goto(f"{live_server.url}/s/{study.slug}/queue/")
    assert card_id(page) == t1.pk
    assert progress(page) == (0, 4)
    # the hotkeys follow the preset's order
    assert box(page, "ambiguous_instruction").get_attribute("data-hotkey") == "1"
    assert box(page, "repetitive_response").get_attribute("data-hotkey") == "9"

    # Card 1: a note, then types 1 and 3 by key, submitted with Enter outside the textarea.
    page.fill('#card textarea[name="note"]', NOTE)
    page.click("#progress")  # leave the text field, as a user clicking elsewhere would
    page.keyboard.press("1")
    page.keyboard.press("3")
    assert box(page, "ambiguous_instruction").is_checked()
    assert box(page, "must_do_omission").is_checked()
    assert submit_with_enter(page) == t2.pk
    assert progress(page) == (1, 4)

    # Card 2: 2 toggles on and off again, 4 stays.
    page.keyboard.press("2")
    page.keyboard.press("4")
    page.keyboard.press("2")
    assert not box(page, "incomplete_instruction").is_checked()
    assert box(page, "must_not_violation").is_checked()
    assert submit_with_enter(page) == t3.pk

    # Card 3: no smell.
    page.keyboard.press("0")
    assert page.locator('#card input[name="no_smell"]').is_checked()
    assert page.locator('#card input[name="types"]:checked').count() == 0
    assert submit_with_enter(page) == t4.pk
    assert progress(page) == (3, 4)
    assert alice_errors == []

    stored = {
        (a.turn_id, a.annotator.username, frozenset(t.code for t in a.types.all()))
        for a in Annotation.objects.filter(is_current=True).select_related("annotator")
    }
    assert stored == {
        (t1.pk, "alice", frozenset({"ambiguous_instruction", "must_do_omission"})),
        (t2.pk, "alice", frozenset({"must_not_violation"})),
        (t3.pk, "alice", frozenset()),
    }
    assert Annotation.objects.get(turn=t1, is_current=True).note == NOTE

    # Bob, in his own browser context, opens the cards Alice labelled: nothing of hers shows.
    bob_context, bob_page, bob_errors = log_in(browser, live_server, "bob")
    for turn in (t1, t2, t3):
        bob_page.goto(f"{live_server.url}/s/{study.slug}/cards/{turn.pk}/")
        assert card_id(bob_page) == turn.pk
        assert bob_page.locator('#card input[name="types"]').count() == 9
        assert bob_page.locator('#card input[name="types"]:checked').count() == 0
        assert not bob_page.locator('#card input[name="no_smell"]').is_checked()
        assert bob_page.locator('#card textarea[name="note"]').input_value() == ""
        assert NOTE not in bob_page.content()
        assert progress(bob_page) == (0, 4)
    assert bob_errors == []
    assert not Annotation.objects.filter(annotator=bob).exists()

    alice_context.close()
    bob_context.close()
