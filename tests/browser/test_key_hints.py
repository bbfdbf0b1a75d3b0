"""Every keyboard hint on every page is true: one test per hint presses the key and checks
its effect (on the server where the hint says it saves). The first tests list the hints each
page shows, so a new hint without a test here fails."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState, Comment, Consensus, Proposal, Turn
from tests.browser.pages import (
    card_id,
    checked_codes,
    htmx_ready,
    key_of,
    log_in,
    open_card,
    submit_with_enter,
    wait_for_card,
)
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CARD_HINTS = {
    "kbd:<type key>",
    "kbd:0",
    "kbd:Enter",
    "title:Enter",
    "title:Previous card (p)",
    "title:Next card (n)",
    "title:Show the earlier turns (c)",
    "title:Diff with earlier code (d)",
    "text:Keys: the key beside a type toggles it, 0 no smell, Enter submit, Ctrl+Enter in a "
    "text box, p/n previous/next, c earlier turns (again: hide them), ' quotes the text selected "
    "in a message as evidence, t tool calls, d code diff, s "
    "skip, f flag for later, ? the guideline (each type's definition and example).",
    "text:Ctrl+Enter · This card goes with it as the example.",
    # skip and flag for later: tests/browser/test_skip_flag.py
    "kbd:s",
    "title:Skip this card (s)",
    "kbd:f",
    "title:Flag this card for later (f)",
    "text:Ctrl+Enter flags the card, Escape closes the box.",
    "kbd:?",  # the guideline button
    "title:Close the guideline (Escape or ?)",
}
REVISE_HINTS = {
    "kbd:<type key>",
    "kbd:0",
    "text:Keys: the key beside a type toggles it, 0 no smell, d code diff, Ctrl+Enter saves.",
    "text:Ctrl+Enter",  # the comment box
    "title:Show the earlier turns (c)",  # the discussion shows the turn too
    "title:Diff with earlier code (d)",
    "kbd:?",  # the guideline button
    "title:Close the guideline (Escape or ?)",
}
# the discussion of an agent's turn (it has tool calls) says t too
AGENT_REVISE_HINTS = {
    h.replace("0 no smell, d code", "0 no smell, t tool calls, d code") for h in REVISE_HINTS
}
DECIDE_HINTS = {
    "kbd:<type key>",
    "kbd:0",
    "text:Keys: the key beside a type toggles it, 0 no smell, d code diff, Ctrl+Enter decides.",
    "text:Ctrl+Enter",
    "title:Show the earlier turns (c)",
    "title:Diff with earlier code (d)",
    "kbd:?",
    "title:Close the guideline (Escape or ?)",
}
AGENT_DECIDE_HINTS = {
    h.replace("0 no smell, d code", "0 no smell, t tool calls, d code") for h in DECIDE_HINTS
}

HINTS_JS = """() => {
  const out = new Set();
  document.querySelectorAll("kbd").forEach(k => {
    const typeBox = k.closest("label.type-toggle")?.querySelector("input[name=types]");
    out.add("kbd:" + (typeBox ? "<type key>" : k.innerText.trim()));
  });
  document.querySelectorAll("[title]").forEach(e => {
    if (e.closest("label.type-toggle")) return;  // definitions, not keys
    const t = e.getAttribute("title");
    if (/\\(\\w\\)|^Enter$|Ctrl\\+|Escape/.test(t)) out.add("title:" + t);
  });
  document.querySelectorAll(".small, .muted").forEach(e => {
    const t = e.textContent.replace(/\\s+/g, " ").trim();
    if (/Ctrl\\+|Keys:|Escape/.test(t)) out.add("text:" + t);
  });
  return [...out];
}"""


def hints(page) -> set[str]:
    return set(page.evaluate(HINTS_JS))


@pytest.fixture
def cards(study, alice, bob):
    """alice's three cards, in one conversation."""
    group = make_group(study, "g", [alice, bob], moderator=make_user("moderator"))
    return list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))


@pytest.fixture
def disputed(cards, alice, bob):
    """The second card (it has an earlier turn), disputed: round 2 is open."""
    turn = cards[1]
    label(turn, alice, "ambiguous_instruction")
    label(turn, bob, "must_do_omission")
    assert CardState.objects.get(turn=turn).status == "disputed"
    return turn


TOOL_PARTS = [
    {"type": "tool_call", "name": "Bash", "arguments": '{"command": "pytest -q"}'},
    {"type": "tool_result", "content": "3 passed"},
    {"type": "thinking", "thinking": "The tests pass."},
]


def with_tool_parts(turn):
    """The turn as an agent's: its reply made tool calls."""
    Turn.objects.filter(pk=turn.pk).update(reply_parts=TOOL_PARTS)
    return turn


def open_parts(page) -> list[bool]:
    """Whether each folded part of the shown turn is open."""
    return page.eval_on_selector_all("section.turn details.part", "els => els.map(e => e.open)")


def open_discussion(page, base: str, turn) -> None:
    page.goto(f"{base}/s/{turn.conversation.study.slug}/cards/{turn.pk}/discussion/")
    page.wait_for_selector("#discussion")
    page.wait_for_load_state("load")


def leave_text_box(page) -> None:
    """Keys act outside a text box, as after a click on the page."""
    page.evaluate("document.activeElement?.blur()")


def keys_toggle_their_types(page, form: str) -> None:
    """Each key shown beside a type toggles that type, and 0 is "no smell"."""
    codes = page.eval_on_selector_all(f"{form} input[name=types]", "els => els.map(e => e.value)")
    leave_text_box(page)
    for code in codes:
        before = checked_codes(page, form)
        page.keyboard.press(key_of(page, code, form))
        assert checked_codes(page, form) == before ^ {code}, code
    page.keyboard.press("0")
    assert checked_codes(page, form) == set()
    assert page.locator(f"{form} input[name=no_smell]").is_checked()


# --- which hints the pages show ---------------------------------------------------------------


def test_the_card_shows_exactly_the_hints_tested_here(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[1])
    assert hints(alice_page) == CARD_HINTS


def test_the_discussion_shows_exactly_the_hints_tested_here(
    browser, live_server, alice_page, disputed
):
    open_discussion(alice_page, live_server.url, disputed)
    assert hints(alice_page) == REVISE_HINTS
    context, mod_page, _ = log_in(browser, live_server, "moderator")
    open_discussion(mod_page, live_server.url, disputed)
    assert hints(mod_page) == DECIDE_HINTS
    context.close()


# --- the card --------------------------------------------------------------------------------


def test_the_key_beside_each_type_toggles_it(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[0])
    keys_toggle_their_types(alice_page, "#card form")


def test_0_is_no_smell_and_clears_the_types(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[0])
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    alice_page.keyboard.press("0")
    assert checked_codes(alice_page) == set()
    assert alice_page.locator("#card input[name=no_smell]").is_checked()
    submit_with_enter(alice_page)
    assert Annotation.objects.get(turn=cards[0]).codes == set()


def test_enter_submits_and_shows_the_next_card(live_server, alice_page, alice, cards):
    open_card(alice_page, live_server.url, cards[0])
    alice_page.keyboard.press(key_of(alice_page, "signature_mismatch"))
    assert submit_with_enter(alice_page) == cards[1].pk
    assert Annotation.objects.get(turn=cards[0], annotator=alice).codes == {"signature_mismatch"}


def test_ctrl_enter_in_the_note_box_submits(live_server, alice_page, alice, cards):
    open_card(alice_page, live_server.url, cards[0])
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    alice_page.fill("#card textarea[name=note]", "rolled back the fix")
    alice_page.focus("#card textarea[name=note]")
    alice_page.keyboard.press("Control+Enter")
    wait_for_card(alice_page, cards[1])
    stored = Annotation.objects.get(turn=cards[0], annotator=alice)
    assert (stored.codes, stored.note) == ({"code_rollback"}, "rolled back the fix")


def test_p_and_n_show_the_previous_and_next_card(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[1])
    alice_page.keyboard.press("n")
    wait_for_card(alice_page, cards[2])
    alice_page.keyboard.press("p")
    wait_for_card(alice_page, cards[1])
    alice_page.keyboard.press("p")
    wait_for_card(alice_page, cards[0])
    assert alice_page.url.endswith(f"/cards/{cards[0].pk}/")


def test_c_shows_the_earlier_turns(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[2])
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector("#context .context-turn")
    text = alice_page.inner_text("#context")
    assert "function number 1" in text and "function number 2" in text
    assert card_id(alice_page) == cards[2].pk


def test_quote_key_takes_the_text_selected_in_an_earlier_turn_as_evidence(
    live_server, alice_page, alice, cards
):
    open_card(alice_page, live_server.url, cards[1])
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector(f'.text[data-turn-id="{cards[0].pk}"][data-part="user"]')
    alice_page.evaluate(
        """id => {
          const node = document.querySelector(`.text[data-turn-id="${id}"][data-part="user"]`)
            .querySelector("p").firstChild;
          const range = document.createRange();
          range.setStart(node, 4);
          range.setEnd(node, 19);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
        }""",
        cards[0].pk,
    )
    alice_page.keyboard.press("'")
    alice_page.wait_for_selector("#evidence-box figure.evidence-quote")
    alice_page.keyboard.press(key_of(alice_page, "code_rollback"))
    submit_with_enter(alice_page)
    stored = Annotation.objects.get(turn=cards[1], annotator=alice)
    text = cards[0].user_text
    assert stored.evidence == text[4:19] == text[stored.evidence_start : stored.evidence_end]
    assert (stored.evidence_turn_id, stored.evidence_part) == (cards[0].pk, "user")


def test_d_shows_and_hides_the_code_diff(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[2])
    alice_page.keyboard.press("d")
    alice_page.wait_for_selector("#diff-panel .diff-block")
    assert "compared with turn 2" in alice_page.inner_text("#diff-panel")
    assert alice_page.get_attribute("[data-diff]", "aria-expanded") == "true"
    alice_page.keyboard.press("d")
    assert alice_page.locator("#diff-panel").is_hidden()
    assert card_id(alice_page) == cards[2].pk


def test_d_in_a_text_box_is_typed_not_a_diff(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[2])
    alice_page.focus("#card textarea[name=note]")
    alice_page.keyboard.press("d")
    assert alice_page.input_value("#card textarea[name=note]") == "d"
    assert alice_page.locator("#diff-panel").is_hidden()


def test_c_again_hides_the_earlier_turns_and_c_shows_them_again(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, cards[2])
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector("#context .context-turn")
    alice_page.keyboard.press("c")
    assert not alice_page.locator("#context-turns").is_visible()
    assert (
        alice_page.locator("[data-context]").get_attribute("title") == "Show the earlier turns (c)"
    )
    alice_page.keyboard.press("c")
    assert alice_page.locator("#context .context-turn").first.is_visible()
    assert (
        alice_page.locator("[data-context]").get_attribute("title") == "Hide the earlier turns (c)"
    )


def test_question_mark_opens_the_guideline_escape_and_question_mark_close_it(
    live_server, alice_page, cards
):
    open_card(alice_page, live_server.url, cards[0])
    for close in ("Escape", "?"):
        alice_page.keyboard.press("?")
        assert alice_page.locator("#guide").is_visible()
        assert "Code Rollback" in alice_page.inner_text("#guide")
        alice_page.keyboard.press(close)
        assert not alice_page.locator("#guide").is_visible()


def test_t_opens_all_tool_calls_then_closes_them(live_server, alice_page, cards):
    open_card(alice_page, live_server.url, with_tool_parts(cards[1]))
    assert open_parts(alice_page) == [False, False, False]
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [True, True, True]
    assert alice_page.locator("section.turn details.part").first.get_by_text("pytest -q").count()
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [False, False, False]
    # one opened by a click: t opens the others, as long as not all are open
    alice_page.locator("section.turn details.part summary").nth(1).click()
    alice_page.evaluate("document.activeElement?.blur()")
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [True, True, True]
    # typed in a text box, t is a letter
    alice_page.focus("#card textarea[name=note]")
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [True, True, True]
    assert alice_page.input_value("#card textarea[name=note]") == "t"


def test_ctrl_enter_sends_a_proposal(live_server, alice_page, alice, cards):
    open_card(alice_page, live_server.url, cards[0])
    alice_page.get_by_text("None fits? Propose a new type").click()
    alice_page.fill("#propose input[name=name]", "Silent retry")
    alice_page.fill("#propose textarea[name=definition]", "Retries without saying so.")
    alice_page.fill("#propose textarea[name=reason]", "None is about retries.")
    htmx_ready(alice_page, "#propose form")
    alice_page.focus("#propose textarea[name=reason]")
    alice_page.keyboard.press("Control+Enter")
    alice_page.wait_for_selector("#propose .ok")
    assert Proposal.objects.get().name == "Silent retry"
    assert not Annotation.objects.exists()


# --- the discussion page -----------------------------------------------------------------------


def test_the_key_beside_each_type_toggles_it_in_the_revise_form(live_server, alice_page, disputed):
    open_discussion(alice_page, live_server.url, disputed)
    keys_toggle_their_types(alice_page, "#revise")


def test_the_discussion_of_an_agents_turn_says_t_and_t_opens_its_tool_calls(
    live_server, alice_page, disputed
):
    open_discussion(alice_page, live_server.url, with_tool_parts(disputed))
    assert hints(alice_page) == AGENT_REVISE_HINTS
    htmx_ready(alice_page, "#revise")
    leave_text_box(alice_page)
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [True, True, True]
    alice_page.keyboard.press("t")
    assert open_parts(alice_page) == [False, False, False]


def test_the_moderator_of_an_agents_turn_is_told_t_and_t_opens_its_tool_calls(
    browser, live_server, disputed
):
    context, page, errors = log_in(browser, live_server, "moderator")
    open_discussion(page, live_server.url, with_tool_parts(disputed))
    assert hints(page) == AGENT_DECIDE_HINTS
    htmx_ready(page, "#decide")
    leave_text_box(page)
    page.keyboard.press("t")
    assert open_parts(page) == [True, True, True]
    assert errors == []
    context.close()


def saved_round_2(alice):
    return Annotation.objects.filter(annotator=alice, round=2, is_current=True).first()


def test_c_shows_the_earlier_turns_on_the_discussion(live_server, alice_page, disputed):
    open_discussion(alice_page, live_server.url, disputed)
    htmx_ready(alice_page, "#context button")
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector("#context .context-turn")
    assert "function number 1" in alice_page.inner_text("#context")


@pytest.mark.parametrize("who", ["alice", "moderator"])
def test_d_shows_the_code_diff_on_the_discussion(browser, live_server, disputed, who):
    context, page, errors = log_in(browser, live_server, who)
    open_discussion(page, live_server.url, disputed)
    htmx_ready(page, "[data-diff]")
    leave_text_box(page)
    page.keyboard.press("d")
    page.wait_for_selector("#diff-panel .diff-block")
    assert "compared with turn 1" in page.inner_text("#diff-panel")
    assert errors == []
    context.close()


def test_c_toggles_and_question_mark_opens_the_guideline_on_the_discussion(
    live_server, alice_page, disputed
):
    open_discussion(alice_page, live_server.url, disputed)
    htmx_ready(alice_page, "#context button")
    alice_page.keyboard.press("c")
    alice_page.wait_for_selector("#context .context-turn")
    alice_page.keyboard.press("c")
    assert not alice_page.locator("#context-turns").is_visible()
    alice_page.keyboard.press("?")
    assert alice_page.locator("#guide").is_visible()
    alice_page.keyboard.press("Escape")
    assert not alice_page.locator("#guide").is_visible()


def test_ctrl_enter_saves_the_revision(live_server, alice_page, alice, disputed):
    open_discussion(alice_page, live_server.url, disputed)
    htmx_ready(alice_page, "#revise")
    leave_text_box(alice_page)
    alice_page.keyboard.press(key_of(alice_page, "ambiguous_instruction", "#revise"))
    alice_page.keyboard.press(key_of(alice_page, "must_do_omission", "#revise"))
    alice_page.keyboard.press("Control+Enter")
    alice_page.wait_for_selector("#revise .ok")
    assert saved_round_2(alice).codes == {"must_do_omission"}


def test_ctrl_enter_in_the_note_box_saves_the_revision(live_server, alice_page, alice, disputed):
    open_discussion(alice_page, live_server.url, disputed)
    htmx_ready(alice_page, "#revise")
    alice_page.fill("#revise textarea[name=note]", "I keep mine")
    alice_page.focus("#revise textarea[name=note]")
    alice_page.keyboard.press("Control+Enter")
    alice_page.wait_for_selector("#revise .ok")
    stored = saved_round_2(alice)
    assert (stored.codes, stored.note) == ({"ambiguous_instruction"}, "I keep mine")


def test_ctrl_enter_sends_a_comment(live_server, alice_page, alice, disputed):
    open_discussion(alice_page, live_server.url, disputed)
    htmx_ready(alice_page, "#thread form")
    alice_page.fill("#thread textarea[name=text]", "Why omission?")
    alice_page.focus("#thread textarea[name=text]")
    alice_page.keyboard.press("Control+Enter")
    alice_page.wait_for_selector('#thread li.comment[data-author="alice"]')
    assert Comment.objects.get().text == "Why omission?"
    assert saved_round_2(alice) is None  # the comment, not the labels


def test_the_key_beside_each_type_toggles_it_in_the_decide_form(browser, live_server, disputed):
    context, page, errors = log_in(browser, live_server, "moderator")
    open_discussion(page, live_server.url, disputed)
    keys_toggle_their_types(page, "#decide")
    assert errors == []
    context.close()


@pytest.mark.parametrize("where", ["rationale box", "outside a text box"])
def test_ctrl_enter_decides(browser, live_server, disputed, where):
    context, page, errors = log_in(browser, live_server, "moderator")
    open_discussion(page, live_server.url, disputed)
    htmx_ready(page, "#decide")
    page.fill("#decide textarea[name=rationale]", "Omission it is.")
    leave_text_box(page)
    page.keyboard.press(key_of(page, "must_do_omission", "#decide"))
    if where == "rationale box":
        page.focus("#decide textarea[name=rationale]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector('#consensus[data-method="moderator"]')
    consensus = Consensus.objects.get(turn=disputed)
    assert (consensus.codes, consensus.rationale) == ({"must_do_omission"}, "Omission it is.")
    assert errors == []
    context.close()
