"""Every submit says what it saved; a failed request (no connection, a 500, a 403, no answer
in time) says what failed and keeps what was typed; the comment and proposal boxes ask before
the page is left with unsent text."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState
from tests.browser.pages import checked_codes, htmx_ready, key_of, open_card, wait_for_card
from tests.browser.test_unsaved_changes import Dialogs, leave_by_link
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def turns(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    return list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))


def tick_and_note(page) -> None:
    page.keyboard.press(key_of(page, "code_rollback"))
    page.fill("#card textarea[name=note]", "the fix is gone again")
    page.evaluate("document.activeElement.blur()")


def still_there(page, turn) -> None:
    assert int(page.get_attribute("#card", "data-turn-id")) == turn.pk
    assert checked_codes(page) == {"code_rollback"}
    assert page.input_value("#card textarea[name=note]") == "the fix is gone again"
    assert not Annotation.objects.exists()


def test_the_next_card_says_what_was_saved_and_links_back(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    tick_and_note(alice_page)
    alice_page.keyboard.press("Enter")
    wait_for_card(alice_page, turns[1])

    status = alice_page.locator("#card [role=status].saved")
    assert status.inner_text() == "Saved: Code Rollback on c1 turn 1."
    status.get_by_role("link").click()
    wait_for_card(alice_page, turns[0])
    assert checked_codes(alice_page) == {"code_rollback"}


def post_fails(page, handler) -> None:
    page.route(
        "**/cards/*/",
        lambda route: handler(route) if route.request.method == "POST" else route.continue_(),
    )


def test_no_connection_says_so_and_keeps_the_input(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    post_fails(alice_page, lambda route: route.abort())
    tick_and_note(alice_page)

    alice_page.keyboard.press("Enter")

    alert = alice_page.locator("#feedback [role=alert]")
    alert.wait_for()
    assert "Not saved: could not reach the server" in alert.inner_text()
    still_there(alice_page, turns[0])


def test_a_server_error_says_which_and_keeps_the_input(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    post_fails(alice_page, lambda route: route.fulfill(status=500, body="boom"))
    tick_and_note(alice_page)

    alice_page.keyboard.press("Enter")

    alert = alice_page.locator("#feedback [role=alert]")
    alert.wait_for()
    assert "Not saved: the server answered 500" in alert.inner_text()
    assert "still here" in alert.inner_text()
    still_there(alice_page, turns[0])

    alice_page.unroute("**/cards/*/")  # the server is back: saved, and the message goes
    alice_page.keyboard.press("Enter")
    wait_for_card(alice_page, turns[1])
    assert alice_page.locator("#feedback [role=alert]").count() == 0
    assert Annotation.objects.get().note == "the fix is gone again"


def test_a_refusal_says_why(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    body = "<html><body><p data-refusal>This card is still in round 1.</p></body></html>"
    post_fails(
        alice_page, lambda route: route.fulfill(status=403, body=body, content_type="text/html")
    )
    tick_and_note(alice_page)

    alice_page.keyboard.press("Enter")

    alert = alice_page.locator("#feedback [role=alert]")
    alert.wait_for()
    assert "the server answered 403" in alert.inner_text()
    assert "This card is still in round 1." in alert.inner_text()
    still_there(alice_page, turns[0])


def test_no_answer_in_time_says_so(live_server, alice_page, turns):
    open_card(alice_page, live_server.url, turns[0])
    alice_page.evaluate("htmx.config.timeout = 500")
    post_fails(alice_page, lambda route: None)  # never answered
    tick_and_note(alice_page)

    alice_page.keyboard.press("Enter")

    alert = alice_page.locator("#feedback [role=alert]")
    alert.wait_for()
    assert "the server did not answer within" in alert.inner_text()
    assert checked_codes(alice_page) == {"code_rollback"}


def test_the_comment_box_asks_before_the_page_is_left(live_server, alice_page, alice, bob, turns):
    label(turns[0], alice, "ambiguous_instruction")
    label(turns[0], bob, "must_do_omission")
    assert CardState.objects.get(turn=turns[0]).status == "disputed"
    dialogs = Dialogs(alice_page)
    alice_page.goto(f"{live_server.url}/s/s1/cards/{turns[0].pk}/discussion/")
    htmx_ready(alice_page, "#thread form")
    alice_page.fill("#thread textarea[name=text]", "why omission?")

    leave_by_link(alice_page, "To discuss")
    alice_page.wait_for_timeout(300)
    assert dialogs.seen == ["beforeunload"]

    alice_page.get_by_role("button", name="Send comment").click()
    assert alice_page.locator("#thread .saved").inner_text() == "Comment sent (round 2)."
    leave_by_link(alice_page, "To discuss")
    alice_page.wait_for_url("**/discuss/")
    assert dialogs.seen == ["beforeunload"]


def test_the_proposal_box_asks_before_the_page_is_left(live_server, alice_page, turns):
    dialogs = Dialogs(alice_page)
    open_card(alice_page, live_server.url, turns[0])
    alice_page.get_by_text("None fits? Propose a new type").click()
    alice_page.fill("#propose input[name=name]", "Silent retry")

    leave_by_link(alice_page, "My cards")
    alice_page.wait_for_timeout(300)

    assert dialogs.seen == ["beforeunload"]
