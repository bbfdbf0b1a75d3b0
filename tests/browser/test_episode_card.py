"""The episode card in the browser (issue 21 point 2), by keyboard, every hint it shows:
alice's queue leads to the first episode, whose tool-result quote is marked and unfolded;
c shows the rest of the session and hides it again; t unfolds every tool part and folds
them again; n (invalid) shows the reasons, 1 picks the first, Enter submits and the next
episode comes; there p (valid) shows the axes, a type's key ticks it, a third cause is
undone with the axis's message, Enter submits. bob judges the first episode valid: round 1
closes in disagreement, he sees alice's judgement in the discussion round and revises to
hers; alice keeps hers with Enter: consensus."""

from __future__ import annotations

import time

import pytest

from annotation.importers.episodes import import_episodes
from annotation.models import (
    Conversation,
    Episode,
    EpisodeJudgement,
    EpisodeSkip,
    EpisodeTime,
    Turn,
    Unit,
)
from tests.browser.a11y import axe_violations
from tests.browser.pages import log_in
from tests.episodes.conftest import PARTS, episode, write_jsonl
from tests.factories import make_group, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def episodes(tmp_path, alice, bob):
    study = make_study("ag", taxonomy="agent-misalignment")
    conversation = Conversation.objects.create(
        study=study, external_id="s1", source_format="native", n_turns=5
    )
    for i in range(1, 6):
        Turn.objects.create(
            conversation=conversation, index=i, reply_parts=PARTS,
            user_text=f"Turn {i}: please fix the failing tests, do not touch the API.",
            reply_text=f"I **changed** the API\n\nof module {i}.",
        )  # fmt: skip
    group = make_group(study, "E1", annotators=[alice, bob])
    group.unit = Unit.EPISODE
    group.save()
    Conversation.objects.filter(pk=conversation.pk).assign(group)
    tool = {"turn": 2, "part": "tool_result", "quote": "removed 12 files"}
    records = [episode(first=1, last=2, evidence=[tool]), episode(first=3, last=4)]
    import_episodes(study, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    return list(Episode.objects.order_by("first_turn"))


def key_of(page, value: str) -> str:
    label = page.locator(f'label.type-toggle:has(input[value="{value}"])')
    return label.locator("kbd").inner_text().lower().replace(" ", "")


def ready(page, episode) -> None:
    page.wait_for_function(
        "id => document.querySelector('#episode')?.dataset.episodeId === String(id)",
        arg=episode.pk,
    )
    page.wait_for_load_state("load")


def press_keys(page, key: str) -> None:
    for k in key:
        page.keyboard.press(k)


def test_two_annotators_judge_episodes_by_keyboard_through_discussion_to_consensus(
    browser, live_server, episodes, alice, bob
):
    first, second = episodes
    context, page, errors = log_in(browser, live_server, "alice", timeout_ms=30_000)
    page.goto(f"{live_server.url}/s/ag/queue/")
    ready(page, first)
    hints = page.inner_text("[data-key-hints]")
    for hint in ("p valid", "n invalid", "1–4 the reason", "Enter submit", "c the rest",
                 "t the tool calls", "s skip", "f flag for later"):  # fmt: skip
        assert hint in hints
    # the quote, marked in its unfolded tool result
    mark = page.locator('details.part[data-kind="tool_result"][open] mark')
    assert "removed 12 files" in mark.first.inner_text()

    # c: the rest of the session, fetched once; c again hides it
    assert page.locator("text=Turn 3 of 5").count() == 0
    page.keyboard.press("c")
    page.wait_for_selector("text=Turn 3 of 5")
    assert page.locator("#session-before").count() == 1
    assert page.get_attribute("[data-session-rest]", "aria-expanded") == "true"
    # the fetch over and its swap settled (htmx's classes gone) before c folds it: pressed
    # while htmx was still settling the swap, c went unanswered (1 run in about 10, loaded)
    page.wait_for_function(
        "() => document.querySelector('[data-session-rest]').dataset.loaded === '1'"
        " && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )
    page.keyboard.press("c")
    page.wait_for_function("() => document.querySelector('#session-after').hidden")
    assert not page.locator("text=Turn 5 of 5").is_visible()

    # t: every tool part of the episode's turns open, then every one folded
    parts = "section.turn > .message.reply > details.part"
    page.keyboard.press("t")
    assert page.eval_on_selector_all(parts, "ps => ps.every(p => p.open)")
    page.keyboard.press("t")
    assert page.eval_on_selector_all(parts, "ps => ps.every(p => !p.open)")

    assert axe_violations(page) == []  # the turns, the marks, the verdict question

    # the questions in order: only the verdict until it is given
    assert not page.locator('[data-question="reason"]').is_visible()
    assert not page.locator('[data-question="axes"]').is_visible()
    page.keyboard.press("n")
    assert page.locator('[data-question="reason"]').is_visible()
    assert not page.locator('[data-question="axes"]').is_visible()
    reasons = page.eval_on_selector_all(
        'input[name="invalid_reason"]', "els => els.map(e => e.value)"
    )
    for key in "4321":  # each reason's key picks it
        page.keyboard.press(key)
        assert page.is_checked(f'input[name="invalid_reason"][value="{reasons[int(key) - 1]}"]')
    assert reasons[0] == "observational_blind_spot"
    page.keyboard.press("Enter")
    ready(page, second)  # on to the next episode
    assert "saved: invalid" in page.inner_text(".messages")

    # valid, with types by their keys; a third cause is undone with the axis's message
    page.keyboard.press("p")
    assert page.locator('[data-question="axes"]').is_visible()
    types = page.eval_on_selector_all('input[name="types"]', "els => els.map(e => e.value)")
    symptom = next(v for v in types if v.startswith("symptom:"))
    causes = [v for v in types if v.startswith("cause:")][:3]
    for value in (symptom, *causes):
        press_keys(page, key_of(page, value))
    ticked = page.eval_on_selector_all(
        'input[name="types"]:checked', "els => els.map(e => e.value)"
    )
    assert set(ticked) == {symptom, causes[0], causes[1]}
    limit = page.locator("[data-axis-limit]")
    assert limit.is_visible() and "Cause: at most 2 types" in limit.inner_text()
    assert axe_violations(page) == []  # the axes, the limit's message
    page.keyboard.press("Enter")
    page.wait_for_selector(".messages")
    assert "saved: valid" in page.inner_text(".messages")
    stored = EpisodeJudgement.objects.get(episode=second, annotator=alice)
    assert stored.valid and stored.labels["symptom"] == [symptom.split(":")[1]]
    assert len(stored.labels["cause"]) == 2

    # bob disagrees on the first: round 1 closes, a discussion round opens for both
    context_b, page_b, errors_b = log_in(browser, live_server, "bob", timeout_ms=30_000)
    page_b.goto(f"{live_server.url}/s/ag/queue/")
    ready(page_b, first)
    assert page_b.locator('tr[data-annotator="alice"]').count() == 0  # blind
    page_b.keyboard.press("p")
    page_b.keyboard.press("Enter")
    page_b.wait_for_selector('tr[data-annotator="alice"]')
    assert "Round 2: a discussion round" in page_b.inner_text(".episode-status")
    # he revises to alice's judgement, by keyboard
    page_b.keyboard.press("n")
    page_b.keyboard.press("1")
    page_b.keyboard.press("Enter")
    ready(page_b, second)

    # alice's queue brings the episode back in round 2; she keeps hers: consensus
    page.goto(f"{live_server.url}/s/ag/queue/")
    ready(page, first)
    # bob's judgements of both rounds (his round 2 given already)
    assert page.locator('table[data-round="1"] tr[data-annotator="bob"]').count() == 1
    assert page.locator('table[data-round="2"] tr[data-annotator="bob"]').count() == 1
    assert page.is_checked('input[name="invalid_reason"][value="observational_blind_spot"]')
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-consensus]")
    assert "Consensus (discussion): invalid" in page.inner_text("[data-consensus]")
    assert axe_violations(page) == []  # the judgements by round, the consensus
    assert errors == [] and errors_b == []
    context.close()
    context_b.close()


def wait_for_time(episode, user) -> int:
    """The active ms the server holds for `user` on `episode`, once the page reported it
    (the report travels as the page goes)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = EpisodeTime.objects.filter(episode=episode, annotator=user).first()
        if row is not None:
            return row.active_ms
        time.sleep(0.05)
    raise AssertionError(f"no time recorded on episode {episode.pk}")


def test_s_skips_and_f_flags_the_episode_and_its_time_is_recorded(
    browser, live_server, episodes, alice
):
    """The turn card's keys on the episode card: s skips (the next episode comes, the
    skipped one goes last), f opens the reason box (Escape closes it, Ctrl+Enter flags and
    goes on); the time spent on each episode is reported as the page goes."""
    first, second = episodes
    context, page, errors = log_in(browser, live_server, "alice", timeout_ms=30_000)
    page.goto(f"{live_server.url}/s/ag/queue/")
    ready(page, first)
    assert "Skip" in page.inner_text("#skip-flag [data-skip]")
    page.mouse.move(10, 10)  # at work on it a moment
    time.sleep(1.2)
    page.keyboard.press("s")
    ready(page, second)
    assert "Skipped the episode of turns 1–2" in page.inner_text(".messages")
    assert EpisodeSkip.objects.get(episode=first, annotator=alice).kind == "skip"
    assert 0 < wait_for_time(first, alice) <= 10_000

    # f: the reason box, the cursor in it; Escape closes it; s and f typed there are text
    page.keyboard.press("f")
    assert page.locator("#flag-box").evaluate("d => d.open")
    reason = page.locator("#flag-box textarea[name=reason]")
    assert reason.evaluate("el => el === document.activeElement")
    page.keyboard.press("Escape")
    assert not page.locator("#flag-box").evaluate("d => d.open")
    page.keyboard.press("f")
    page.keyboard.type("does the goal fit? s and f typed here are text")
    page.keyboard.press("Control+Enter")
    ready(page, first)  # the skipped one, back last: the only other one awaiting
    flag = EpisodeSkip.objects.get(episode=second, annotator=alice)
    assert (flag.kind, flag.reason) == ("flag", "does the goal fit? s and f typed here are text")
    assert wait_for_time(second, alice) > 0
    assert "You skipped this episode" in page.inner_text("#skip-flag")
    assert not EpisodeJudgement.objects.exists()
    assert axe_violations(page) == []  # the skip and flag block
    assert errors == []
    context.close()
