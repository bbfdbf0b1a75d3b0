"""An annotator of a split-check study sees the original beside what is checked (an entry,
its turns marked, or, over boundaries, the two parts with the boundary in view), reaches each
side with Tab (it scrolls with the arrow keys), and labels the card with the keyboard alone."""

from __future__ import annotations

import pytest

from annotation.intake.splitcheck import create_split_check
from annotation.models import Annotation, Conversation, Job, JobKind, JobStatus, SetAside, Turn
from tests.browser.a11y import assert_no_serious_violations
from tests.browser.pages import box, checked_codes, key_of, log_in, submit_with_enter, wait_for_card
from tests.factories import make_conversation, make_group, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _split(original: Conversation, start: int) -> None:
    for i, (first, end) in enumerate([(1, start), (start, original.n_turns + 1)], 1):
        part = Conversation.objects.create(
            study=original.study,
            external_id=f"{original.external_id}/part{i}",
            source_format="native",
            n_turns=end - first,
            split_from=original,
            split_first_turn=first,
        )
        Turn.objects.bulk_create(
            Turn(
                conversation=part,
                index=k - first + 1,
                user_text=t.user_text,
                reply_text=t.reply_text,
            )
            for k, t in (
                (t.index, t) for t in original.turns.filter(index__gte=first, index__lt=end)
            )
        )
    Conversation.objects.filter(pk=original.pk).update(set_aside=SetAside.SPLIT)


def tab_to(page, selector: str, most: int = 80) -> None:
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_an_annotator_sees_the_split_beside_the_original_and_labels_it_with_keys(
    browser, live_server, alice
):
    source = make_study("src")
    for ext in ("long", "other"):
        original = make_conversation(source, ext, n_turns=12)
        Turn.objects.filter(conversation=original, index=9).update(
            user_text="Now a **different topic**: a SQL query"
        )
        _split(original, 9)
    study = create_split_check(source, "check", n=2, seed=0, unit="boundaries")
    group = make_group(study, "G", [alice])
    Conversation.objects.filter(study=study).assign(group)
    first, second = Turn.objects.filter(conversation__study=study).order_by("conversation_id")

    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1400, "height": 800})
    page.goto(f"{live_server.url}/s/check/queue/")
    wait_for_card(page, first)

    assert_no_serious_violations(page, "split-check card")
    original = page.locator(".split-original")
    parts = page.locator(".split-part")
    assert parts.count() == 2
    # side by side: the original on the left, the parts on the right, both in view
    o, p = original.bounding_box(), parts.first.bounding_box()
    assert o["x"] + o["width"] <= p["x"] + 1 and abs(o["y"] - p["y"]) < 5
    assert "Part 1: long/part1 (turns 1–8 of the original)" in parts.nth(0).inner_text()
    assert "Part 2: long/part2 (turns 9–12 of the original)" in parts.nth(1).inner_text()
    # the original opens scrolled to the boundary (turn 9 of 12 is far down)
    boundary = page.locator("#split-boundary")
    assert "Split here: part 2 starts at turn 9" in boundary.inner_text()
    assert original.evaluate("el => el.scrollTop") > 0
    box_o, box_b = original.bounding_box(), boundary.bounding_box()
    assert box_o["y"] <= box_b["y"] <= box_o["y"] + box_o["height"]
    # rendered Markdown on both sides
    assert original.locator("strong", has_text="different topic").count() == 1
    assert parts.nth(1).locator("strong", has_text="different topic").count() == 1

    # the keyboard reaches each side (a scrolling region) and scrolls it
    page.locator("body").focus()
    tab_to(page, ".split-original")
    original.evaluate("el => el.scrollTop = 0")
    page.keyboard.press("PageDown")
    page.wait_for_function("() => document.querySelector('.split-original').scrollTop > 0")
    # past the original's code blocks (each scrolls sideways, so each takes the focus too)
    tab_to(page, '.split-part[data-part="1"]')
    tab_to(page, '.split-part[data-part="2"]')

    # the split-check preset's keys: "Split too late" is 3, pick-one replaces it with 1
    assert key_of(page, "split_too_late") == "3" and key_of(page, "right_split") == "1"
    page.keyboard.press("3")
    assert checked_codes(page) == {"split_too_late"}
    page.keyboard.press("1")
    assert checked_codes(page) == {"right_split"}
    assert submit_with_enter(page) == second.pk
    assert box(page, "right_split").is_checked() is False
    page.keyboard.press("4")
    assert checked_codes(page) == {"should_not_split"}
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/s/check/queue/")

    stored = {
        a.turn_id: a.codes
        for a in Annotation.objects.filter(annotator=alice, is_current=True).prefetch_related(
            "types"
        )
    }
    assert stored == {first.pk: {"right_split"}, second.pk: {"should_not_split"}}
    assert errors == []
    context.close()


def test_an_annotator_sees_the_entry_beside_its_original_and_labels_it_with_keys(
    browser, live_server, alice
):
    source = make_study("src")
    long = make_conversation(source, "long", n_turns=12)
    Turn.objects.filter(conversation=long, index=9).update(
        user_text="Now a **different topic**: a SQL query"
    )
    _split(long, 9)
    whole = make_conversation(source, "whole", n_turns=3)
    Job.objects.create(
        study=source, kind=JobKind.SPLIT, status=JobStatus.DONE,
        params={"conversations": [long.pk, whole.pk]},
    )  # fmt: skip
    study = create_split_check(source, "check", n=3, seed=0)  # every entry: long#1, #2, whole
    group = make_group(study, "G", [alice])
    Conversation.objects.filter(study=study).assign(group)
    cards = {
        t.conversation.external_id: t
        for t in Turn.objects.filter(conversation__study=study).select_related("conversation")
    }
    assert set(cards) == {"long/part1", "long/part2", "whole"}

    context, page, errors = log_in(browser, live_server, "alice")
    page.set_viewport_size({"width": 1400, "height": 800})
    page.goto(f"{live_server.url}/s/check/queue/")
    wait_for_card(page, cards["long/part1"])
    # the entry preset's keys: 4 is "ends too early", pick-one
    assert key_of(page, "ends_too_early") == "4" and key_of(page, "correct") == "1"
    page.keyboard.press("4")
    assert checked_codes(page) == {"ends_too_early"}
    assert submit_with_enter(page) == cards["long/part2"].pk

    assert_no_serious_violations(page, "split-check entry card")
    original, entry = page.locator(".split-original"), page.locator(".split-entry")
    # side by side: the original on the left, the entry on the right, both in view
    o, e = original.bounding_box(), entry.bounding_box()
    assert o["x"] + o["width"] <= e["x"] + 1 and abs(o["y"] - e["y"]) < 5
    assert "Entry: long/part2 (part 2, turns 9–12 of the original)" in entry.inner_text()
    assert entry.locator(".turn-mark").count() == 4
    # the original opens scrolled to where the entry starts; its four turns carry the mark
    start = page.locator("#entry-start")
    assert "The entry starts: turn 9" in start.inner_text()
    assert original.evaluate("el => el.scrollTop") > 0
    box_o, box_s = original.bounding_box(), start.bounding_box()
    assert box_o["y"] <= box_s["y"] <= box_o["y"] + box_o["height"]
    marked = original.locator(".split-turn.side-entry")
    assert marked.count() == 4 and "Turn 9 of 12 · the entry's" in marked.first.inner_text()
    assert marked.first.evaluate("el => getComputedStyle(el).borderLeftWidth") == "4px"
    assert original.locator(".split-turn.side-outside").count() == 8
    assert entry.locator("strong", has_text="different topic").count() == 1

    # the keyboard reaches both sides
    page.locator("body").focus()
    tab_to(page, ".split-original")
    tab_to(page, ".split-entry")
    page.keyboard.press("5")
    assert checked_codes(page) == {"mixes_topics"}
    page.keyboard.press("1")
    assert checked_codes(page) == {"correct"}
    assert submit_with_enter(page) == cards["whole"].pk

    # an entry left whole: the original alone, full width, every turn marked
    assert page.locator(".split-entry").count() == 0
    only = page.locator(".split-original")
    assert only.locator(".split-turn.side-entry").count() == 3
    assert "Entry = original, left whole: whole (3 turns)" in only.inner_text()
    sides = page.locator(".split-sides").bounding_box()
    assert only.bounding_box()["width"] > 0.95 * sides["width"]
    assert_no_serious_violations(page, "split-check whole entry card")

    stored = {
        a.turn_id: a.codes
        for a in Annotation.objects.filter(annotator=alice, is_current=True).prefetch_related(
            "types"
        )
    }
    assert stored == {
        cards["long/part1"].pk: {"ends_too_early"},
        cards["long/part2"].pk: {"correct"},
    }
    assert errors == []
    context.close()


def test_the_leads_split_check_page_has_no_serious_accessibility_violation(
    browser, live_server, lead, study
):
    original = make_conversation(study, "long", n_turns=4)
    _split(original, 3)
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/{study.slug}/lead/split-check/")
    assert "1 split point" in page.locator("#split-points").inner_text()
    assert_no_serious_violations(page, "lead: split check")
    page.fill('input[name="n"]', "1")
    page.get_by_role("button", name="Create the split-check study").click()
    page.wait_for_url(f"{live_server.url}/s/s1-split-check/")
    assert errors == []
    context.close()
