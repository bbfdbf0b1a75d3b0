"""Helpers shared by the browser tests: log in, wait for htmx, read and drive the card and
the discussion page."""

from __future__ import annotations

from tests.browser.test_annotate_flow import box, card_id, log_in, submit_with_enter
from tests.browser.test_rounds_flow import htmx_ready

__all__ = ["box", "card_id", "checked_codes", "htmx_ready", "log_in", "open_card"]
__all__ += ["submit_with_enter", "wait_for_card", "key_of"]


def open_card(page, base: str, turn) -> None:
    page.goto(f"{base}/s/{turn.conversation.study.slug}/cards/{turn.pk}/")
    wait_for_card(page, turn)


def wait_for_card(page, turn) -> None:
    """The card of `turn` is shown and htmx has wired its form (keys may be pressed)."""
    page.wait_for_function(
        "id => document.querySelector('#card')?.dataset.turnId === String(id)", arg=turn.pk
    )
    page.wait_for_load_state("load")
    htmx_ready(page, "#card form")


def checked_codes(page, form: str = "#card form") -> set[str]:
    return set(
        page.eval_on_selector_all(
            f'{form} input[name="types"]:checked', "els => els.map(e => e.value)"
        )
    )


def key_of(page, code: str, form: str = "#card form") -> str:
    """The key shown beside a type (its <kbd>), which must be the one its box answers to."""
    label = page.locator(f'{form} label.type-toggle:has(input[value="{code}"])')
    shown = label.locator("kbd").inner_text().lower().replace(" ", "")
    assert label.locator("input").get_attribute("data-hotkey") == shown
    return shown
