"""No page writes an error to the browser's console and none breaks its Content-Security-Policy
(issue 23: the policy refused inline styles on the open-sort card after a submit and on the
API's browsable page, errors a user sees in the console). Every page of the accessibility list
(tests/browser/test_accessibility.py PAGES), opened by its user and driven as there, plus the
open-sort card after a submit and the API's browsable pages."""

from __future__ import annotations

import re

import pytest

from annotation.models import Turn
from tests.browser.pages import wait_for_card
from tests.browser.test_accessibility import PAGES, log_in, world  # noqa: F401 - the fixture
from tests.browser.test_csp import WATCH
from tests.browser.test_open_sort_tagging import leave_box_and_submit, pick_by_keys
from tests.factories import make_conversation, make_group, make_user
from tests.opensort.board_factories import make_open_sort, make_tag

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# The refusals the app answers on purpose, shown on the page as its message (a card's round
# closed under the user: 409; a used invitation: 410; a form with a bad line: 422). Chrome logs
# every answer that is not 2xx as "Failed to load resource"; these are the page working.
DELIBERATE = re.compile(
    r"Failed to load resource: the server responded with a status of 4(09|10|22)\b"
)


class Console:
    """What a browser context reports: console errors, policy violations, uncaught errors."""

    def __init__(self, context, page, errors: list[str]) -> None:
        self.problems: list[str] = [f"uncaught: {e}" for e in errors]
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        page.on("console", self.on_console)
        context.expose_binding(
            "__cspViolation", lambda source, text: self.problems.append(f"policy: {text}")
        )
        context.add_init_script(WATCH)

    def on_console(self, msg) -> None:
        if msg.type == "error" and not DELIBERATE.search(msg.text):
            self.problems.append(f"console: {msg.text} ({msg.location.get('url')})")

    def check(self, page, where: str) -> None:
        page.wait_for_load_state("networkidle")
        assert self.problems == [], f"{where} ({page.url}):\n  " + "\n  ".join(self.problems)


def watched(browser, base: str, username: str | None):
    context, page, errors = log_in(browser, base, username)
    return context, page, Console(context, page, errors)


@pytest.mark.parametrize("spec", PAGES, ids=[p.name for p in PAGES])
def test_the_page_has_no_console_error(browser, live_server, world, spec):  # noqa: F811
    context, page, console = watched(browser, live_server.url, spec.user)
    spec.open(page, live_server.url, world)
    console.check(page, spec.name)
    context.close()


def test_the_open_sort_card_after_a_submit_has_no_console_error(browser, live_server, study):
    sort = make_open_sort(study)
    make_tag(study, sort["experts"][0], "vague ask")  # alice's own tag, offered in the box
    turns = sort["turns"]
    context, page, console = watched(browser, live_server.url, "alice")
    page.goto(f"{live_server.url}/s/{study.slug}/queue/")
    wait_for_card(page, turns[0])
    pick_by_keys(page, "vag", "vague ask")
    assert leave_box_and_submit(page) == turns[1].pk  # the next card, swapped in by htmx
    console.check(page, "the open-sort card after a submit")
    context.close()


def test_the_apis_browsable_pages_have_no_console_error(browser, live_server, world):  # noqa: F811
    context, page, console = watched(browser, live_server.url, "lead")
    for path in ("/api/studies/", "/api/studies/s1/", "/api/studies/s1/cards/"):
        response = page.goto(live_server.url + path)
        assert response.headers["content-type"].startswith("text/html"), path
        console.check(page, f"the API's browsable page {path}")
    context.close()


def test_a_card_with_an_aligned_markdown_table_has_no_console_error(browser, live_server, study):
    # markdown-it aligns a table's columns with style attributes; the card gives classes
    alice = make_user("alice")
    group = make_group(study, "g", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    Turn.objects.filter(pk=turn.pk).update(
        reply_text="| name | n |\n|:-----|--:|\n| a | 1 |\n| bb | 22 |\n"
    )
    context, page, console = watched(browser, live_server.url, "alice")
    page.goto(f"{live_server.url}/s/{study.slug}/cards/{turn.pk}/")
    wait_for_card(page, turn)
    cell = page.locator("#card .md td").nth(1)
    assert cell.evaluate("td => getComputedStyle(td).textAlign") == "right"
    console.check(page, "a card with an aligned table")
    context.close()
