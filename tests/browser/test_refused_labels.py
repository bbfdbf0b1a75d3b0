"""A submit the server refuses (the card's round closed while the page was open) leaves the
form showing what is stored, locked when the card is locked, with a message saying why:
never the refused ticks, as if they had been saved."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState
from tests.browser.pages import (
    card_id,
    checked_codes,
    htmx_ready,
    key_of,
    log_in,
    open_card,
)
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def turn(study, alice, bob):
    group = make_group(study, "g", [alice, bob], moderator=make_user("moderator"))
    return make_conversation(study, "c1", n_turns=2, group=group).turns.order_by("index")[0]


def test_a_card_refused_after_round_1_closed_shows_the_stored_labels_locked(
    browser, live_server, alice, bob, turn
):
    label(turn, alice, "code_rollback", note="stored note")
    context, page, errors = log_in(browser, live_server, "alice")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.type), d.accept()))
    open_card(page, live_server.url, turn)
    label(turn, bob, "must_do_omission")  # meanwhile: round 1 closes, the card is disputed

    page.keyboard.press(key_of(page, "ambiguous_instruction"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#card .errorlist")
    assert card_id(page) == turn.pk
    assert checked_codes(page) == {"code_rollback"}
    assert page.locator("#card input[name=types]:not([disabled])").count() == 0
    message = page.inner_text("#card .errorlist")
    assert "Not saved: This card has left round 1" in message
    assert "You had chosen: Ambiguous Instruction, Code Rollback." in message
    assert page.input_value("#card textarea[name=note]") == "stored note"
    assert "your labels are locked" in page.inner_text("#card")
    # what shows is what is stored: leaving asks nothing
    page.get_by_role("link", name="My cards").click()
    page.wait_for_url(f"{live_server.url}/s/s1/cards/")
    assert dialogs == []
    assert Annotation.objects.get(turn=turn, annotator=alice).codes == {"code_rollback"}
    assert errors == []
    context.close()


def test_a_revision_refused_as_its_round_closed_shows_the_stored_labels(
    browser, live_server, monkeypatch, study, alice, bob, turn
):
    study.discussion_rounds = 2
    study.save()
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "must_do_omission")
    label(turn, alice, "ambiguous_instruction", round=2)
    context, page, errors = log_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/s/s1/cards/{turn.pk}/discussion/")
    htmx_ready(page, "#revise")
    real_submit = Annotation.submit

    def bob_gets_there_first(cls, **fields):
        """Bob's round-2 labels land just before alice's: round 3 opens, hers is refused."""
        monkeypatch.setattr(Annotation, "submit", real_submit)
        label(turn, bob, "must_do_omission", round=2)
        return real_submit(**fields)

    monkeypatch.setattr(Annotation, "submit", classmethod(bob_gets_there_first))
    page.keyboard.press(key_of(page, "code_rollback", "#revise"))
    page.keyboard.press("Control+Enter")
    page.wait_for_selector('#discussion[data-round="3"]')
    assert "Your labels were not saved: This card is in round 3, not round 2." in page.inner_text(
        "#discussion .errorlist"
    )
    assert checked_codes(page, "#revise") == {"ambiguous_instruction"}
    assert CardState.objects.get(turn=turn).round == 3
    assert not Annotation.objects.filter(turn=turn, round=3).exists()
    assert errors == []
    context.close()
