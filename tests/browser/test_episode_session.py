"""The session page of an episode group in the browser (issue 21 point 2B): alice opens her
session from her sessions, finds the coverage question closed and its key doing nothing,
opens the two extracted episodes, unfolds the tool parts with t, selects text in a tool
result and quotes it with ', selects text in a user message and adds it with the button,
records the missed episode, and rates the coverage with the 2 key. Every keyboard hint the
page shows is listed here and pressed; the page meets its Content-Security-Policy."""

from __future__ import annotations

import pytest

from annotation.models import CoverageRating, Episode, EpisodeSeen
from tests.browser.a11y import axe_violations
from tests.browser.pages import htmx_ready, log_in
from tests.browser.test_csp import WATCH
from tests.episodes import session_world
from tests.episodes.conftest import agents  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HINTS = {
    "kbd:'",
    "kbd:0",
    "kbd:1",
    "kbd:2",
    "title:Add the selected text as a quote (')",
    "title:None (0)",
    "title:Partly (1)",
    "title:Fully (2)",
    "text:Keys: ' adds the text selected in a turn as a quote, 0/1/2 rate the coverage (none, "
    "partly, fully), t tool calls.",
}

HINTS_JS = """() => {
  const out = new Set();
  const root = document.getElementById("session");
  root.querySelectorAll("kbd").forEach(k => out.add("kbd:" + k.textContent.trim()));
  root.querySelectorAll("[title]").forEach(e => {
    if (/\\(.{1,9}\\)$/.test(e.title)) out.add("title:" + e.title);
  });
  out.add("text:" + document.getElementById("session-keys").textContent.trim());
  return [...out];
}"""

SELECT_JS = """([selector, words]) => {
  const holder = document.querySelector(selector);
  const walker = document.createTreeWalker(holder, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(words);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + words.length);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return selection.toString();
  }
  return null;
}"""


@pytest.fixture
def world(agents, tmp_path, alice, bob):  # noqa: F811
    return session_world.build(agents, tmp_path, alice, bob)


def test_alice_records_a_missed_episode_and_rates_coverage_by_key(browser, live_server, world):
    alice = world["group"].annotators.get(username="alice")
    context, page, errors = log_in(browser, live_server, "alice", timeout_ms=30_000)
    violations: list[str] = []  # of the Content-Security-Policy (tests/browser/test_csp.py)
    context.expose_binding("__cspViolation", lambda source, text: violations.append(text))
    context.add_init_script(WATCH)
    page.goto(f"{live_server.url}/s/ag/sessions/")
    page.get_by_role("link", name="s1").click()
    page.wait_for_selector("#session")
    assert sorted(page.evaluate(HINTS_JS)) == sorted(HINTS)

    # the question is closed: 1 does nothing, the page says why
    assert "2 not yet seen" in page.locator("#coverage-closed").inner_text()
    page.keyboard.press("1")
    page.wait_for_timeout(300)
    assert not CoverageRating.objects.exists()

    # open both extracted episodes: each is recorded as seen, and the question opens
    for e in world["extracted"]:
        htmx_ready(page, f"#episode-{e.pk} [data-open-episode]")
        page.locator(f"#episode-{e.pk} [data-open-episode]").click()
        page.wait_for_selector(f'.opened-episode[data-episode-id="{e.pk}"]')
    assert EpisodeSeen.objects.filter(annotator=alice).count() == 2
    # the opened one (turns 3-4) is marked in the session (once htmx has settled the swap)
    page.wait_for_selector(".session-turn.in-episode#turn-3")
    marked = page.eval_on_selector_all(".session-turn.in-episode", "els => els.map(e => e.id)")
    assert marked == ["turn-3", "turn-4"]
    assert page.locator("#coverage fieldset[disabled]").count() == 0
    assert page.locator("#extracted-episodes .flag").count() == 0  # none "not yet opened"

    # t unfolds the tool parts; a tool result's text quoted with '
    assert page.locator("details.part[open]").count() == 0
    page.keyboard.press("t")
    assert page.locator("details.part[open]").count() == page.locator("details.part").count()
    result = '#turn-3 details.part[data-kind="tool_result"]'
    assert page.evaluate(SELECT_JS, [result, "removed 12 files"]) == "removed 12 files"
    page.keyboard.press("'")
    page.wait_for_selector('[data-quote-where="3:tool_result:0-16"]')
    # a user message's text added with the button
    user = '#turn-1 .text[data-part="user"]'
    assert page.evaluate(SELECT_JS, [user, "do not touch the API"]) == "do not touch the API"
    page.locator("[data-add-quote]").click()
    page.wait_for_selector('[data-quote-where="1:user:38-58"]')
    assert axe_violations(page) == []

    page.fill('input[name="first_turn"]', "2")
    page.fill('input[name="last_turn"]', "3")
    page.fill('textarea[name="goal"]', "keep the tests")
    page.get_by_role("button", name="Save the episode").click()
    page.wait_for_selector("text=Saved: your episode on turns 2-3 (2 quotes).")
    created = Episode.objects.get(run__isnull=True)
    assert (created.created_by, created.first_turn, created.last_turn) == (alice, 2, 3)
    assert sorted(q.part for q in created.evidence.all()) == ["tool_result", "user"]

    # 2 rates the coverage fully
    page.keyboard.press("2")
    page.wait_for_selector("#coverage-rated")
    assert "Your rating: 2 (fully)." in page.locator("#coverage-rated").inner_text()
    rating = CoverageRating.objects.get(annotator=alice, is_current=True)
    assert rating.rating == 2
    # 0 changes it, keeping the old row
    page.keyboard.press("0")
    page.wait_for_selector("text=Your rating: 0 (none).")
    assert list(CoverageRating.objects.order_by("pk").values_list("rating", "is_current")) == [
        (2, False),
        (0, True),
    ]
    assert errors == [] and violations == []
