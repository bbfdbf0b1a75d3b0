"""The open sort in the browser (issue 11, point 1): two experts tag six cards with free
tags of their own (new ones with a description, reused through the autocomplete, several
per card), alice with the keyboard only, bob with the mouse; neither ever sees the other's
tags. And every keyboard hint of the open-sort card, each pressed and checked."""

from __future__ import annotations

import pytest

from annotation.models import CardSkip, FreeTag, TagSet
from tests.browser.a11y import assert_no_serious_violations, focused, tab_through
from tests.browser.pages import (
    card_id,
    htmx_ready,
    log_in,
    open_card,
    submit_with_enter,
    wait_for_card,
)
from tests.browser.test_key_hints import hints, with_tool_parts
from tests.opensort.tag_helpers import cards_of, open_sort_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OPEN_SORT_HINTS = {
    "kbd:g",
    "kbd:0",
    "kbd:Enter",
    "title:Enter",
    "title:Previous card (p)",
    "title:Next card (n)",
    "title:Show the earlier turns (c)",
    "title:Diff with earlier code (d)",
    "text:Keys: g the tag box, Enter adds the tag typed or highlighted (↑/↓ through your tags; "
    "in an empty box Enter submits), Backspace in the empty box removes the last tag, Escape "
    "leaves the box, 0 no smell, Enter submit, Ctrl+Enter in a text box, p/n previous/next, c "
    "earlier turns (again: hide them), t tool calls, d code diff, s skip, f flag for later.",
    # skip and flag for later: the same box as on the closed-sort card (tested below too)
    "kbd:s",
    "title:Skip this card (s)",
    "kbd:f",
    "title:Flag this card for later (f)",
    "text:Ctrl+Enter flags the card, Escape closes the box.",
}


@pytest.fixture
def six(study, alice, bob):
    """Six cards (two conversations of three) of the experts alice and bob, open-sorting."""
    group = open_sort_group(study, [alice, bob])
    return cards_of(study, group, "c1", 3) + cards_of(study, group, "c2", 3)


def chips(page) -> list[str]:
    return page.eval_on_selector_all(
        "#card [data-chosen-tags] > li", "els => els.map(e => e.dataset.tag)"
    )


def suggestions(page) -> list[str]:
    return page.eval_on_selector_all(
        "#tag-suggestions [role=option]", "els => els.map(e => e.dataset.name)"
    )


def answered(page, text: str) -> None:
    """Wait until the autocomplete shows its answer to `text`."""
    page.wait_for_selector(f'#tag-suggestions [data-query="{text}"]', state="attached")


def type_in_box(page, text: str) -> None:
    """Type into the focused tag box and wait for the autocomplete's answer."""
    page.keyboard.type(text)
    answered(page, text)


def to_box(page) -> None:
    """g, unless the focus is in the tag box already (after an added tag it stays there)."""
    if (focused(page) or {}).get("name") != "new_tag":
        page.keyboard.press("g")
    assert focused(page)["name"] == "new_tag"


def add_by_keys(page, name: str, description: str = "") -> None:
    """(g,) the name, (Tab, the description), Enter: a new tag, by the keyboard only."""
    to_box(page)
    type_in_box(page, name)
    if description:
        page.keyboard.press("Tab")
        page.keyboard.type(description)
    page.keyboard.press("Enter")
    assert name in chips(page)


def pick_by_keys(page, start: str, name: str) -> None:
    """(g,) the first letters, Down to the suggestion, Enter: one's own tag reused."""
    to_box(page)
    type_in_box(page, start)
    assert name in suggestions(page)
    for _ in range(suggestions(page).index(name) + 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert name in chips(page)


def leave_box_and_submit(page) -> int:
    page.keyboard.press("Escape")
    return submit_with_enter(page)


def test_two_experts_open_sort_six_cards_blind(browser, live_server, study, alice, bob, six):
    _, page, errors = log_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/s/s1/queue/")
    wait_for_card(page, six[0])

    # card 1: two new tags, one with a description; Enter in the empty box submits
    add_by_keys(page, "vague goal", "no success criterion")
    add_by_keys(page, "no tests")
    assert focused(page)["name"] == "new_tag"
    assert submit_with_enter(page) == six[1].pk
    assert "Saved your tags: no tests, vague goal" in page.locator("#card").inner_text()
    # card 2: her own tag again, through the autocomplete
    pick_by_keys(page, "vag", "vague goal")
    assert leave_box_and_submit(page) == six[2].pk
    # card 3: no smell
    page.keyboard.press("0")
    assert submit_with_enter(page) == six[3].pk
    # card 4: a tag added then removed with Backspace, two of her own picked instead
    add_by_keys(page, "scope creep")
    page.keyboard.press("Backspace")
    assert chips(page) == []
    pick_by_keys(page, "no t", "no tests")
    pick_by_keys(page, "goal", "vague goal")
    assert leave_box_and_submit(page) == six[4].pk
    # card 5: a third tag; then p, back to card 4, to change it: "no tests" removed
    add_by_keys(page, "scope creep", "asks for more than it needs")
    assert leave_box_and_submit(page) == six[5].pk
    assert page.locator("#progress").inner_text().startswith("5 of 6")
    page.keyboard.press("p")
    wait_for_card(page, six[4])
    page.keyboard.press("p")
    wait_for_card(page, six[3])
    assert sorted(chips(page)) == ["no tests", "vague goal"]
    page.keyboard.press("g")
    page.keyboard.press("Backspace")  # the last tag: vague goal
    assert chips(page) == ["no tests"]
    assert leave_box_and_submit(page) == six[5].pk  # the next card not tagged yet
    assert errors == []

    mine = {
        t.turn_id: sorted(x.name for x in t.tags.all())
        for t in TagSet.objects.filter(annotator=alice)
    }
    assert mine == {
        six[0].pk: ["no tests", "vague goal"],
        six[1].pk: ["vague goal"],
        six[2].pk: [],
        six[3].pk: ["no tests"],
        six[4].pk: ["scope creep"],
    }
    assert (
        FreeTag.objects.get(author=alice, name="vague goal").description == "no success criterion"
    )
    assert FreeTag.objects.filter(author=alice).count() == 3

    # bob, with the mouse: none of alice's tags on any card nor in his autocomplete
    _, bob_page, bob_errors = log_in(browser, live_server, "bob")
    for turn in six:
        open_card(bob_page, live_server.url, turn)
        assert chips(bob_page) == []
        assert not bob_page.locator("#card input[name=no_smell]").is_checked()
        bob_page.click("#new-tag")
        bob_page.fill("#new-tag", "o")
        answered(bob_page, "o")
        assert suggestions(bob_page) == ([] if turn == six[0] else ["bob's own"])
        if turn == six[0]:
            bob_page.fill("#new-tag", "bob's own")
            bob_page.fill("#new-tag-description", "bob's words")
            bob_page.click("#card [data-add-tag]")
        else:
            bob_page.click("#tag-suggestions [role=option]")
        assert chips(bob_page) == ["bob's own"]
        for secret in ("vague goal", "no tests", "scope creep", "no success criterion"):
            assert secret not in bob_page.content()
        bob_page.click("#card button[type=submit]")
        # the next card, or after the last one the page that says all are done
        bob_page.wait_for_function(
            "old => document.querySelector('#card')?.dataset.turnId !== String(old)", arg=turn.pk
        )
    assert bob_errors == []
    assert {t.author.username for t in FreeTag.objects.filter(tag_sets__annotator=bob)} == {"bob"}
    assert TagSet.objects.filter(annotator=bob).count() == 6

    # and alice, back on her first card, sees her own tags only
    open_card(page, live_server.url, six[0])
    assert sorted(chips(page)) == ["no tests", "vague goal"]
    assert "bob" not in page.locator("#card").inner_text()


# --- the hints of the open-sort card --------------------------------------------------------


def test_the_open_sort_card_shows_exactly_the_hints_tested_here(live_server, alice_page, six):
    open_card(alice_page, live_server.url, six[1])
    assert hints(alice_page) == OPEN_SORT_HINTS
    assert_no_serious_violations(alice_page, "the open-sort card")


def test_tab_reaches_the_tag_box_no_smell_the_note_and_submit_with_a_visible_focus(
    live_server, alice_page, six
):
    open_card(alice_page, live_server.url, six[0])
    reached = tab_through(alice_page)
    names = {(r["tag"], r["name"]) for r in reached}
    assert {
        ("input", "new_tag"),
        ("input", "new_description"),
        ("input", "no_smell"),
        ("textarea", "note"),
    } <= names
    assert any(r["tag"] == "button" and r["text"].startswith("Submit") for r in reached)
    hidden = [r for r in reached if not r["visible"]]
    assert hidden == [], f"focus not visible on: {hidden}"


def test_g_focuses_the_tag_box_and_escape_leaves_it(live_server, alice_page, six):
    open_card(alice_page, live_server.url, six[0])
    alice_page.keyboard.press("g")
    assert focused(alice_page)["name"] == "new_tag"
    alice_page.keyboard.press("Escape")
    assert focused(alice_page) is None
    # in a text box g is a letter
    alice_page.click("#card textarea[name=note]")
    alice_page.keyboard.press("g")
    assert alice_page.locator("#card textarea[name=note]").input_value() == "g"


def test_enter_adds_the_typed_tag_and_in_the_empty_box_submits(live_server, alice_page, alice, six):
    open_card(alice_page, live_server.url, six[0])
    alice_page.keyboard.press("g")
    alice_page.keyboard.type("typed tag")
    alice_page.keyboard.press("Enter")
    assert chips(alice_page) == ["typed tag"]
    assert card_id(alice_page) == six[0].pk  # added, not submitted
    assert submit_with_enter(alice_page) == six[1].pk
    assert [t.name for t in TagSet.objects.get(annotator=alice).tags.all()] == ["typed tag"]


def test_up_and_down_move_through_my_tags_and_enter_adds_the_highlighted(
    live_server, alice_page, six
):
    open_card(alice_page, live_server.url, six[0])
    for name in ("alpha", "beta"):
        add_by_keys(alice_page, name)
    submit_with_enter(alice_page)
    to_box(alice_page)
    type_in_box(alice_page, "a")  # both hold an a: alpha first (it starts with it)
    assert suggestions(alice_page) == ["alpha", "beta"]
    alice_page.keyboard.press("ArrowDown")
    alice_page.keyboard.press("ArrowDown")
    alice_page.keyboard.press("ArrowUp")
    selected = alice_page.get_attribute("#new-tag", "aria-activedescendant")
    assert alice_page.get_attribute(f"#{selected}", "data-name") == "alpha"
    alice_page.keyboard.press("Enter")
    assert chips(alice_page) == ["alpha"]


def test_backspace_in_the_empty_box_and_the_remove_button_remove_a_tag(
    live_server, alice_page, six
):
    open_card(alice_page, live_server.url, six[0])
    for name in ("one", "two", "three"):
        add_by_keys(alice_page, name)
    alice_page.keyboard.press("Backspace")
    assert chips(alice_page) == ["one", "two"]
    alice_page.keyboard.press("Shift+Tab")  # from the box back to the last remove button
    alice_page.keyboard.press("Enter")
    assert chips(alice_page) == ["one"]


def test_0_is_no_smell_and_clears_the_tags(live_server, alice_page, alice, six):
    open_card(alice_page, live_server.url, six[0])
    add_by_keys(alice_page, "one")
    alice_page.keyboard.press("Escape")
    alice_page.keyboard.press("0")
    assert chips(alice_page) == []
    assert alice_page.locator("#card input[name=no_smell]").is_checked()
    submit_with_enter(alice_page)
    assert TagSet.objects.get(annotator=alice).tags.count() == 0


def test_ctrl_enter_in_the_note_submits(live_server, alice_page, alice, six):
    open_card(alice_page, live_server.url, six[0])
    add_by_keys(alice_page, "one")
    alice_page.click("#card textarea[name=note]")
    alice_page.keyboard.type("a note")
    before = card_id(alice_page)
    alice_page.keyboard.press("Control+Enter")
    alice_page.wait_for_function(
        "old => document.querySelector('#card')?.dataset.turnId !== String(old)", arg=before
    )
    assert TagSet.objects.get(annotator=alice).note == "a note"


def test_p_and_n_move_between_cards(live_server, alice_page, six):
    open_card(alice_page, live_server.url, six[1])
    alice_page.keyboard.press("n")
    wait_for_card(alice_page, six[2])
    alice_page.keyboard.press("p")
    wait_for_card(alice_page, six[1])


def test_a_refused_submit_keeps_the_tags_on_the_panel(live_server, alice_page, six):
    open_card(alice_page, live_server.url, six[0])
    alice_page.keyboard.press("g")
    alice_page.keyboard.press("Enter")  # nothing chosen: refused, named
    alice_page.wait_for_selector("#card .errorlist")
    assert "Add at least one tag" in alice_page.locator("#card .errorlist").inner_text()
    assert card_id(alice_page) == six[0].pk


def test_c_d_and_t_show_the_turn_on_the_open_sort_card_as_on_any_card(live_server, alice_page, six):
    open_card(alice_page, live_server.url, with_tool_parts(six[2]))
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector("#context .context-turn")
    assert "function number 1" in alice_page.inner_text("#context")
    alice_page.keyboard.press("d")
    alice_page.wait_for_selector("#diff-panel .diff-block")
    alice_page.keyboard.press("t")
    assert alice_page.eval_on_selector_all(
        "section.turn details.part", "els => els.every(e => e.open)"
    )
    assert chips(alice_page) == []  # none of those keys touched the tags


def test_s_skips_and_f_flags_an_open_sort_card(live_server, alice_page, alice, six):
    open_card(alice_page, live_server.url, six[0])
    alice_page.keyboard.press("s")
    wait_for_card(alice_page, six[1])
    alice_page.keyboard.press("f")
    alice_page.keyboard.type("what would this be?")
    htmx_ready(alice_page, "#flag-box form")
    alice_page.keyboard.press("Control+Enter")
    wait_for_card(alice_page, six[2])
    assert sorted(CardSkip.objects.filter(annotator=alice).values_list("kind", flat=True)) == [
        "flag",
        "skip",
    ]
    assert not TagSet.objects.exists()
