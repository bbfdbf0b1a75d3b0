"""The labels panel stays in view however long the card and its context (25 turns of long
text, the context open), on the card and on the discussion page; the turn says "Turn N of M"
and so does each earlier turn; the earlier turns fold again (button or c), fetched once."""

from __future__ import annotations

import pytest

from annotation.models import Turn
from tests.browser.pages import htmx_ready, log_in, open_card
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "\n".join(
    f"line {i}: the model keeps the earlier constraint, or does it?" for i in range(40)
)
CODE = "```python\n" + "\n".join(f"def f{i}(x):\n    return x * {i}" for i in range(30)) + "\n```"


@pytest.fixture
def last_turn(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    conversation = make_conversation(study, "long-one", n_turns=25, group=group)
    Turn.objects.filter(conversation=conversation).update(user_text=LONG, reply_text=CODE)
    return conversation.turns.get(index=25)


@pytest.fixture
def alice_page(browser, live_server, alice):
    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    yield page
    assert errors == []
    context.close()


def in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """s => { const r = document.querySelector(s).getBoundingClientRect();
                  return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""",
        selector,
    )


def open_context(page, n: int) -> None:
    """`c`, then "Show earlier turns" until all n are there: the context comes
    CARDSORT_CONTEXT_TURNS (20) turns at a time, the nearest first."""
    htmx_ready(page, "[data-context]")
    page.keyboard.press("c")
    count = "() => document.querySelectorAll('#context .context-turn').length"
    page.wait_for_function(f"() => ({count})() === Math.min({n}, 20)")
    while (shown := page.evaluate(count)) < n:
        page.click("#context .context-more button")
        page.wait_for_function(f"() => ({count})() > {shown}")


def scroll_to(page, fraction: float) -> None:
    page.evaluate(
        "f => window.scrollTo(0, (document.body.scrollHeight - innerHeight) * f)", fraction
    )
    page.wait_for_timeout(50)


def assert_stays_in_view(page, selector: str) -> None:
    assert page.evaluate("document.body.scrollHeight") > 20 * 800  # a long page indeed
    for fraction in (1.0, 0.5, 0.25):
        scroll_to(page, fraction)
        assert in_viewport(page, selector), fraction
    scroll_to(page, 0.0)  # at the top it sits below the header: its top in view
    assert 0 <= page.locator(selector).bounding_box()["y"] < page.viewport_size["height"] / 2


def test_the_labels_panel_stays_in_view_with_25_turns_open(live_server, alice_page, last_turn):
    open_card(alice_page, live_server.url, last_turn)
    open_context(alice_page, 24)

    assert_stays_in_view(alice_page, "#card form.types")
    # and it is usable there: a type key ticks the box in view
    scroll_to(alice_page, 0.5)
    alice_page.locator("#card form.types label.type-toggle").first.click()
    assert alice_page.locator("#card form.types input[name=types]:checked").count() == 1


def test_the_discussion_panel_stays_in_view_with_25_turns_open(
    live_server, alice_page, alice, bob, last_turn
):
    label(last_turn, alice, "code_rollback")
    label(last_turn, bob, "must_do_omission")
    alice_page.goto(f"{live_server.url}/s/s1/cards/{last_turn.pk}/discussion/")
    htmx_ready(alice_page, "#revise")
    open_context(alice_page, 24)

    assert_stays_in_view(alice_page, "#discussion")
    scroll_to(alice_page, 0.5)
    box = alice_page.locator("#revise").bounding_box()
    assert 0 <= box["y"] < 800  # the form starts in view (the column scrolls on its own)


def test_the_turn_and_each_earlier_turn_say_which_they_are(live_server, alice_page, last_turn):
    open_card(alice_page, live_server.url, last_turn)
    assert alice_page.locator(".turn-mark.current").inner_text() == "Turn 25 of 25"
    open_context(alice_page, 24)

    marks = alice_page.locator("#context .turn-mark").all_inner_texts()

    assert marks == [f"Turn {i} of 25" for i in range(1, 25)]


def test_the_earlier_turns_fold_again_and_are_fetched_once(live_server, alice_page, last_turn):
    fetched = []
    alice_page.on("request", lambda r: fetched.append(r.url) if "/context/" in r.url else None)
    open_card(alice_page, live_server.url, last_turn)
    button = alice_page.locator("[data-context]")
    assert button.inner_text() == "Show 24 earlier turns"

    open_context(alice_page, 24)
    assert button.inner_text() == "Hide earlier turns"
    assert button.get_attribute("aria-expanded") == "true"

    button.click()  # the button folds them
    assert not alice_page.locator("#context-turns").is_visible()
    assert button.inner_text() == "Show 24 earlier turns"
    alice_page.keyboard.press("c")  # and c unfolds them
    assert alice_page.locator("#context-turns .context-turn").first.is_visible()
    alice_page.keyboard.press("c")
    assert not alice_page.locator("#context-turns").is_visible()
    alice_page.wait_for_timeout(200)

    assert len(fetched) == 2  # the nearest 20 once, and the 4 before them once
