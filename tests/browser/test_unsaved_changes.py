"""Unsaved labels or notes are never dropped silently: leaving the page asks first (the
browser's beforeunload dialog), and so do p / n on the card (htmx swaps the card in place);
once saved, nothing asks."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState
from tests.browser.pages import (
    card_id,
    checked_codes,
    htmx_ready,
    key_of,
    open_card,
    submit_with_enter,
    wait_for_card,
)
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Dialogs:
    """Answers the page's dialogs as told (accept or dismiss) and records their types."""

    def __init__(self, page):
        self.seen: list[str] = []
        self.accept = False
        page.on("dialog", self._answer)

    def _answer(self, dialog) -> None:
        self.seen.append(dialog.type)
        if self.accept:
            dialog.accept()
        else:
            dialog.dismiss()


@pytest.fixture
def cards(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    return list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))


def leave_by_link(page, name: str) -> None:
    page.get_by_role("link", name=name).click(no_wait_after=True)


def test_it_asks_before_leaving_a_card_with_unsaved_labels(live_server, alice_page, alice, cards):
    dialogs = Dialogs(alice_page)
    open_card(alice_page, live_server.url, cards[0])
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    leave_by_link(alice_page, "My cards")
    alice_page.wait_for_timeout(300)
    assert dialogs.seen == ["beforeunload"]
    # staying: the card and the tick are still there
    assert card_id(alice_page) == cards[0].pk
    assert checked_codes(alice_page) == {"code_rollback"}

    dialogs.accept = True
    leave_by_link(alice_page, "My cards")
    alice_page.wait_for_url(f"{live_server.url}/s/s1/cards/")
    assert dialogs.seen == ["beforeunload", "beforeunload"]
    assert not Annotation.objects.exists()


def test_it_asks_before_leaving_a_card_with_an_unsaved_note(live_server, alice_page, cards):
    dialogs = Dialogs(alice_page)
    open_card(alice_page, live_server.url, cards[0])
    alice_page.fill("#card textarea[name=note]", "half a thought")
    alice_page.evaluate("document.activeElement.blur()")
    leave_by_link(alice_page, "My cards")
    alice_page.wait_for_timeout(300)
    assert dialogs.seen == ["beforeunload"]
    assert alice_page.input_value("#card textarea[name=note]") == "half a thought"


def test_it_does_not_ask_once_the_labels_are_saved(live_server, alice_page, alice, cards):
    dialogs = Dialogs(alice_page)
    open_card(alice_page, live_server.url, cards[0])
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    assert submit_with_enter(alice_page) == cards[1].pk
    alice_page.keyboard.press("0")
    assert submit_with_enter(alice_page) == cards[2].pk
    leave_by_link(alice_page, "My cards")
    alice_page.wait_for_url(f"{live_server.url}/s/s1/cards/")
    # the last card: the server sends the browser to the done page, nothing asks either
    open_card(alice_page, live_server.url, cards[2])
    alice_page.keyboard.press("0")
    alice_page.keyboard.press("Enter")
    alice_page.wait_for_url("**/queue/")
    assert dialogs.seen == []
    assert Annotation.objects.filter(annotator=alice).count() == 3


def test_p_and_n_ask_before_dropping_unsaved_labels(live_server, alice_page, cards):
    dialogs = Dialogs(alice_page)
    open_card(alice_page, live_server.url, cards[1])
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    alice_page.keyboard.press("n")
    alice_page.wait_for_timeout(300)
    assert dialogs.seen == ["confirm"]
    assert card_id(alice_page) == cards[1].pk  # kept: the change is still there
    assert checked_codes(alice_page) == {"code_rollback"}

    dialogs.accept = True
    alice_page.keyboard.press("p")
    wait_for_card(alice_page, cards[0])
    assert dialogs.seen == ["confirm", "confirm"]
    # nothing unsaved on this card: n goes on without asking
    alice_page.keyboard.press("n")
    wait_for_card(alice_page, cards[1])
    assert checked_codes(alice_page) == set()  # the dropped tick was never stored
    assert dialogs.seen == ["confirm", "confirm"]
    assert not Annotation.objects.exists()


def test_it_asks_before_leaving_the_discussion_with_an_unsaved_revision(
    live_server, alice_page, alice, bob, cards
):
    turn = cards[0]
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "must_do_omission")
    assert CardState.objects.get(turn=turn).status == "disputed"
    dialogs = Dialogs(alice_page)
    alice_page.goto(f"{live_server.url}/s/s1/cards/{turn.pk}/discussion/")
    htmx_ready(alice_page, "#revise")
    alice_page.keyboard.press(key_of(alice_page, "must_do_omission", "#revise"))
    leave_by_link(alice_page, "To discuss")
    alice_page.wait_for_timeout(300)
    assert dialogs.seen == ["beforeunload"]
    assert checked_codes(alice_page, "#revise") == {"ambiguous_instruction", "must_do_omission"}

    alice_page.get_by_role("button", name="Save labels for round 2").click()
    alice_page.wait_for_selector("#revise .ok")
    leave_by_link(alice_page, "To discuss")
    alice_page.wait_for_url("**/discuss/")
    assert dialogs.seen == ["beforeunload"]
    stored = Annotation.objects.get(annotator=alice, round=2)
    assert stored.codes == {"ambiguous_instruction", "must_do_omission"}
