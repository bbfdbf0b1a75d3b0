"""The propose box on the card, in headless Chromium: typing in it never toggles a type or
submits the labels, and Ctrl+Enter sends the proposal, not the labels."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Proposal
from tests.browser.pages import log_in
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_propose_box_keeps_its_keys_to_itself(browser, live_server, study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    turns = list(make_conversation(study, "conv-a", n_turns=2, group=group).turns.all())
    context, page, errors = log_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/s/{study.slug}/cards/{turns[0].pk}/")

    page.get_by_text("None fits? Propose a new type").click()
    page.locator('#propose input[name="name"]').click()
    page.keyboard.type("Type 12 optimisation")  # digits: hotkeys elsewhere on the card
    page.locator('#propose textarea[name="definition"]').fill("Optimises before it works.")
    page.locator('#propose textarea[name="reason"]').click()
    page.keyboard.type("None is about it.")
    assert page.locator('input[name="types"]:checked').count() == 0
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#propose .ok")
    assert "Proposal sent" in page.locator("#propose").inner_text()
    assert Proposal.objects.get().name == "Type 12 optimisation"
    assert not Annotation.objects.exists()
    assert page.get_attribute("#card", "data-turn-id") == str(turns[0].pk)

    # outside the box the card's keys still work
    page.keyboard.press("Escape")  # leaves the text box, as on the rest of the card
    page.keyboard.press("1")
    assert page.locator('input[data-hotkey="1"]').is_checked()
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"() => document.querySelector('#card').dataset.turnId == '{turns[1].pk}'"
    )
    assert Annotation.objects.get().turn_id == turns[0].pk
    assert errors == []
    context.close()
