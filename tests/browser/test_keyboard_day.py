"""A keyboard-only day of twenty cards (issue 9's acceptance test): alice works through her
queue with keys alone: a diff on a reply that rolls back an earlier fix, Back after a submit,
a tool-call card whose folded calls open with t, a skip and a flag that come back at the end
of the queue, the last turn of a 25-turn conversation whose labels panel stays in view with
the context open; then the lead reads the time per card. Every label is checked where it is
stored, and every time figure against the CardTime rows behind it."""

from __future__ import annotations

import statistics

import numpy
import pytest

from annotation.models import Annotation, CardSkip, CardTime, Conversation, Turn
from annotation.tasks import run_times
from tests.browser.pages import checked_codes, htmx_ready, key_of, log_in, wait_for_card
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BUGGY = "```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```"
FIXED = (
    "Fixed: an empty list no longer divides by zero.\n\n```python\ndef mean(xs):\n"
    "    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n```"
)
ROLLED_BACK = (
    "Here is the function with a docstring.\n\n```python\ndef mean(xs):\n"
    '    """The mean of xs."""\n    return sum(xs) / len(xs)\n```'
)
PARTS = [
    {"kind": "tool_call", "name": "Bash", "arguments": {"command": "pytest -q tests/test_mean.py"}},
    {"kind": "tool_result", "name": "Bash", "content": "1 failed, 3 passed"},
]
ROLLBACK, NO_SMELL = "code_rollback", set()


def conversation(study, group, external_id: str, turns: list[tuple[str, str, list]]):
    c = Conversation.objects.create(
        study=study, external_id=external_id, source_format="native", n_turns=len(turns)
    )
    Conversation.objects.filter(pk=c.pk).assign(group)
    Turn.objects.bulk_create(
        Turn(conversation=c, index=i, user_text=u, reply_text=r, reply_parts=parts)
        for i, (u, r, parts) in enumerate(turns, 1)
    )
    return list(c.turns.order_by("index"))


@pytest.fixture
def day(study, alice, bob):
    """Twenty cards in alice's queue, in this order: 3 of a conversation whose third reply
    rolls back the second's fix, 2 of an agent session with tool calls, 14 plain cards, and
    the last turn of a 25-turn conversation (she labelled its first 24 turns yesterday)."""
    group = make_group(study, "g", [alice, bob])
    rollback = conversation(
        study,
        group,
        "rollback",
        [
            ("write mean()", BUGGY, []),
            ("it crashes on []", FIXED, []),
            ("add a docstring", ROLLED_BACK, []),
        ],
    )
    agent = conversation(
        study,
        group,
        "agent",
        [("run the tests", "The tests ran: one fails.", PARTS), ("fix it", "Done.", [])],
    )
    plain = list(make_conversation(study, "plain", n_turns=14, group=group).turns.order_by("index"))
    long_text = "\n\n".join(f"Paragraph {i}: " + "words " * 80 for i in range(12))
    long = conversation(
        study, group, "long", [(f"step {i}: {long_text}", long_text, []) for i in range(1, 26)]
    )
    for turn in long[:24]:
        label(turn, alice, ROLLBACK)
    return {"rollback": rollback, "agent": agent, "plain": plain, "last": long[24]}


def tick_and_submit(page, keys: list[str], next_turn) -> None:
    htmx_ready(page, "#card form")
    for key in keys:
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    if next_turn is None:
        page.wait_for_url("**/queue/")
    else:
        wait_for_card(page, next_turn)


def stored(turn, user) -> set[str]:
    return Annotation.objects.get(turn=turn, annotator=user, is_current=True).codes


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The Time per card job the lead starts: the test runs it (no worker here)."""
    jobs: list[int] = []
    monkeypatch.setattr(run_times, "delay", jobs.append)
    return jobs


def test_a_keyboard_only_day_of_twenty_cards(browser, live_server, alice, lead, day, queued):
    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/s/{day['last'].conversation.study.slug}/queue/")
    r1, r2, r3 = day["rollback"]
    wait_for_card(page, r1)
    one, two = "1", "2"

    # 1-2. the buggy code, then its fix
    tick_and_submit(page, [one], r2)
    tick_and_submit(page, [two], r3)

    # 3. the rollback: d shows the diff against the closest code, turn 1's bug with a
    # docstring added; the fix it undid is one link away (turn 2): its guard lines removed
    htmx_ready(page, "#card [data-diff]")
    page.keyboard.press("d")
    panel = page.locator("#diff-panel")
    panel.locator("table").first.wait_for()
    assert "compared with turn 1" in panel.locator("h3").inner_text().lower()
    assert panel.locator("td.add").all_inner_texts() == ['    """The mean of xs."""']
    page.locator('#diff-panel a[data-against="2"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#diff-panel h3')?.textContent.includes('turn 2')"
    )
    removed = [t.strip() for t in panel.locator("td.del").all_inner_texts()]
    assert "if not xs:" in removed and "return 0.0" in removed
    rollback_key = key_of(page, ROLLBACK)
    a1, a2 = day["agent"]
    tick_and_submit(page, list(rollback_key), a1)

    # Back after a submit: the card as stored, ticked; one key still toggles once
    page.go_back()
    wait_for_card(page, r3)
    assert checked_codes(page) == {ROLLBACK}
    htmx_ready(page, "#card form")
    page.keyboard.press("n")
    wait_for_card(page, a1)

    # 4. the tool-call card: t opens the folded calls
    parts = page.locator("#card details.part")
    assert parts.count() == 2 and not parts.first.evaluate("d => d.open")
    page.keyboard.press("t")
    assert parts.evaluate_all("ds => ds.every(d => d.open)")
    assert "pytest -q tests/test_mean.py" in page.inner_text("#card details.part >> nth=0")
    tick_and_submit(page, ["3"], a2)
    tick_and_submit(page, ["0"], day["plain"][0])

    # 5. skip the first plain card, flag the second with a reason
    plain = day["plain"]
    htmx_ready(page, "#card form")
    page.keyboard.press("s")
    wait_for_card(page, plain[1])
    htmx_ready(page, "#card form")
    page.keyboard.press("f")
    page.keyboard.type("Is a polite refusal a smell?")
    page.keyboard.press("Control+Enter")
    wait_for_card(page, plain[2])

    # 6. twelve plain cards
    for i in range(2, len(plain)):
        following = plain[i + 1] if i + 1 < len(plain) else day["last"]
        tick_and_submit(page, [str(i % 9 + 1)], following)

    # 7. turn 25 of 25 with its 24 earlier turns open (two windows): the labels panel stays in view
    last = day["last"]
    assert f"of {last.conversation.n_turns}" in page.inner_text("#card")
    htmx_ready(page, "#card [data-context]")
    page.keyboard.press("c")
    # the nearest 20 first (CARDSORT_CONTEXT_TURNS), the 4 before them one click further
    page.wait_for_function(
        "() => document.querySelectorAll('#context .context-turn').length === 20"
    )
    page.click("#context .context-more button")
    page.wait_for_function(
        "() => document.querySelectorAll('#context .context-turn').length === 24"
    )
    for where in ("middle", "bottom"):
        y = "document.body.scrollHeight / 2" if where == "middle" else "document.body.scrollHeight"
        page.evaluate(f"window.scrollTo(0, {y})")
        box = page.locator("#card form.types").bounding_box()
        viewport = page.viewport_size
        assert box["y"] >= 0 and box["y"] < viewport["height"] / 2, where
        submit = page.locator("#card form.types button[type=submit]").bounding_box()
        assert 0 <= submit["y"] and submit["y"] + submit["height"] <= viewport["height"], where
    # the skipped card comes back first (oldest put off), then the flagged one
    tick_and_submit(page, list(rollback_key), plain[0])
    tick_and_submit(page, ["4"], plain[1])
    tick_and_submit(page, ["5"], None)
    assert "All done" in page.inner_text("main")
    assert errors == []
    context.close()

    # twenty cards labelled today, as pressed
    today = Annotation.objects.filter(annotator=alice, is_current=True).exclude(
        turn__conversation__external_id="long", turn__index__lt=25
    )
    assert today.count() == 20
    assert stored(r3, alice) == {ROLLBACK} and stored(a2, alice) == NO_SMELL
    assert stored(last, alice) == {ROLLBACK}
    flag = CardSkip.objects.get(turn=plain[1])
    assert (flag.kind, flag.reason) == ("flag", "Is a polite refusal a smell?")

    # the lead reads the time per card: alice's median is the median of her stored times
    times = list(CardTime.objects.filter(annotator=alice).values_list("active_ms", flat=True))
    assert len(times) >= 20 and all(ms > 0 for ms in times)
    context, page, errors = log_in(browser, live_server, "lead")
    time_page = f"{live_server.url}/s/{last.conversation.study.slug}/lead/time/"
    page.goto(time_page)
    # the tables come from a Time per card job (issue 25): the lead starts it; the test runs
    # it as a worker would (no worker here), then the page reads it
    page.get_by_role("button", name="Compute").click()
    for _ in range(200):  # the job is queued once the POST's transaction commits
        if queued:
            break
        page.wait_for_timeout(50)
    (job_id,) = queued
    run_times.apply(args=[job_id])
    page.goto(time_page)
    row = page.locator('table[data-table="annotator"] tr', has_text="alice")
    n, median, p90 = row.locator("td").all_inner_texts()
    assert (n, median) == (str(len(times)), f"{statistics.median(times) / 1000:.1f} s")
    assert p90 == f"{float(numpy.percentile(times, 90)) / 1000:.1f} s"
    assert errors == []
    context.close()
