"""The card's clock (static/js/timer.js) under Playwright's fake clock: it counts while the
annotator is at work, pauses a minute after the last input and while the tab is hidden, and
reports the time of the card being left when htmx swaps in the next one or the page goes.
Every figure is read from the CardTime row the server stored."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from annotation import timing
from annotation.models import CardTime
from tests.browser.pages import log_in, open_card, wait_for_card
from tests.factories import make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
S = 1_000  # ms
SETTLE_MS = 100


@pytest.fixture(autouse=True)
def no_wall_time_check(monkeypatch):
    """The page's clock is fake and runs minutes in a moment; the server's is real. Its
    wall-time check (tests/timing) would refuse every report after the first: lift it."""
    monkeypatch.setattr(timing, "SLACK_MS", 10**9)


@pytest.fixture
def cards(study, alice, bob):
    group = make_group(study, "g", [alice, bob])
    return list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))


def stored_ms(turn, user) -> int:
    row = CardTime.objects.filter(turn=turn, annotator=user).first()
    return row.active_ms if row else 0


def wait_for_ms(turn, user, expected: int) -> None:
    """The server holds `expected` ms for the card (reports travel on real time)."""
    deadline = time.monotonic() + 10
    while stored_ms(turn, user) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stored_ms(turn, user) == expected


def on_paused_card(browser, live_server, turn):
    """alice's card, loaded at T0 under a paused fake clock: time moves only by run_for."""
    context, page, errors = log_in(browser, live_server, "alice")
    # installed a minute early: pause_at(T0) must be ahead of the running fake clock, which a
    # slow machine takes past its install time before the pause ("fast-forward to the past")
    page.clock.install(time=T0 - timedelta(minutes=1))
    page.clock.pause_at(T0)
    open_card(page, live_server.url, turn)
    return context, page, errors


def wiggle(page, n: int) -> None:
    """An input: the pointer moves (to a new place each time, or no event fires)."""
    page.mouse.move(100 + 7 * n, 200 + 3 * (n % 5))


def set_visibility(page, state: str) -> None:
    """What the browser does when the tab goes to the background or comes back."""
    page.evaluate(
        """state => {
          Object.defineProperty(document, "visibilityState", {value: state, configurable: true});
          Object.defineProperty(document, "hidden", {value: state === "hidden", configurable: true});
          document.dispatchEvent(new Event("visibilitychange"));
        }""",
        state,
    )


def test_it_counts_while_active_and_pauses_a_minute_after_the_last_input(
    browser, live_server, cards, alice
):
    turn = cards[0]
    context, page, errors = on_paused_card(browser, live_server, turn)
    for n in range(6):  # at work for a minute: an input every 10 s
        wiggle(page, n)
        page.clock.run_for(10 * S)
    wait_for_ms(turn, alice, 60 * S)  # reported every 15 s

    # no input after 0:50: the clock runs to 1:50, then stops, whatever time passes
    page.clock.run_for(240 * S)
    wait_for_ms(turn, alice, 110 * S)
    # an input at 5:00 starts it again; the report at 5:15 carries those 15 s
    wiggle(page, 7)
    page.clock.run_for(15 * S)
    wait_for_ms(turn, alice, 125 * S)
    assert errors == []
    context.close()


def test_it_does_not_count_while_the_tab_is_hidden(browser, live_server, cards, alice):
    turn = cards[0]
    context, page, errors = on_paused_card(browser, live_server, turn)
    page.clock.run_for(10 * S)  # the card was opened at 0:00 (an input), read for 10 s
    set_visibility(page, "hidden")
    wait_for_ms(turn, alice, 10 * S)  # going to the background reports (sendBeacon)

    page.clock.run_for(30 * S)  # hidden from 0:10 to 0:40: not counted
    set_visibility(page, "visible")
    # back at 0:40 with no input since 0:00: counts to 1:00, then pauses
    page.clock.run_for(60 * S)
    wait_for_ms(turn, alice, 30 * S)
    assert errors == []
    context.close()


def next_card_in(page, turn) -> None:
    """htmx has swapped `turn`'s card in; its settle step (a 20 ms timer) runs on the fake
    clock too: SETTLE_MS pass, counted on the new card."""
    page.wait_for_function(
        "id => document.querySelector('#card')?.dataset.turnId === String(id)", arg=turn.pk
    )
    page.clock.run_for(SETTLE_MS)
    wait_for_card(page, turn)


def test_leaving_a_card_reports_its_time_to_that_card(browser, live_server, cards, alice):
    t1, t2, t3 = cards
    context, page, errors = on_paused_card(browser, live_server, t1)
    page.clock.run_for(5 * S)
    page.keyboard.press("n")  # htmx swaps in the next card: t1's 5 s go first
    next_card_in(page, t2)
    wait_for_ms(t1, alice, 5 * S)

    page.clock.run_for(7 * S)
    page.keyboard.press("0")
    page.keyboard.press("Enter")  # submitted: t3 comes in, t2's time is reported
    next_card_in(page, t3)
    wait_for_ms(t2, alice, SETTLE_MS + 7 * S)

    page.clock.run_for(2 * S)  # before the next 15 s report, which would carry t3's time
    page.goto(f"{live_server.url}/")  # leaving the page: pagehide, sendBeacon
    wait_for_ms(t3, alice, SETTLE_MS + 2 * S)
    # the time of each card went to it
    assert (stored_ms(t1, alice), stored_ms(t2, alice)) == (5 * S, SETTLE_MS + 7 * S)
    assert errors == []
    context.close()
