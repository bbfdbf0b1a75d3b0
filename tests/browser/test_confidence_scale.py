"""The 1-5 confidence scale says what each point means (issue 23: a newcomer saw bare
numbers): each point is a radio whose label gives its number and words, found by that label,
and a choice made with it is saved with the card's keys (Enter submits)."""

from __future__ import annotations

import pytest

from annotation.forms import CONFIDENCE
from annotation.models import Annotation
from tests.browser.pages import box, log_in, open_card, submit_with_enter
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_each_point_has_its_label_and_a_choice_is_saved(browser, live_server, study, alice):
    group = make_group(study, "g", [alice])
    turn = make_conversation(study, "c1", n_turns=2, group=group).turns.get(index=1)
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, turn)
    page.click("#card details summary:has-text('Evidence and confidence')")
    scale = page.get_by_role("group", name="Confidence")
    for value, word in CONFIDENCE.items():
        radio = scale.get_by_label(f"{value} {word}", exact=True)
        assert radio.get_attribute("type") == "radio"
        assert radio.get_attribute("value") == str(value)
    assert scale.locator("input:checked").count() == 0  # none given yet
    # the card's keys still say what they do
    assert "Enter submit" in page.inner_text("#card form")

    scale.get_by_label("4 sure").check()
    box(page, "code_rollback").check()
    page.evaluate("document.activeElement?.blur()")
    submit_with_enter(page)
    assert Annotation.objects.get(turn=turn, annotator=alice).confidence == 4
    open_card(page, live_server.url, turn)
    assert page.get_by_label("4 sure").is_checked()
    assert errors == []
    context.close()
