"""An agent episode, end to end in the browser: a study on the agent-misalignment preset
created and filled from a Claude Code session log by the commands; alice labels the second
turn on the six axes by keyboard (a pick-one axis's second key replaces its first), selects
text in the earlier turn's reply and quotes it with ', and submits with Enter; the stored
annotation has the quote's span; once bob has labelled, the export has one column group per
axis and the lead's report page one section per axis."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation import exports
from annotation.agreement.data import compute_study_report
from annotation.evidence import EvidenceSpan
from annotation.models import Annotation, Conversation, Job, JobKind, JobStatus, Kind, Role, Study
from annotation.reply_parts import reply_part_text
from tests.browser.a11y import axe_violations
from tests.browser.pages import checked_codes, key_of, log_in, open_card
from tests.factories import label, make_group, make_user
from tests.importers.agent_files import SESSION, claude_code_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SELECT_JS = """([turnId, part, words]) => {
  const message = document.querySelector(`.text[data-turn-id="${turnId}"][data-part="${part}"]`);
  const walker = document.createTreeWalker(message, NodeFilter.SHOW_TEXT);
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
def episode(tmp_path, alice, bob):
    call_command(
        "create_study", "agents", "--taxonomy", "agent-misalignment", "--no-lead", stdout=StringIO()
    )
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in claude_code_session()))
    call_command("import_conversations", "agents", str(path), stdout=StringIO())
    study = Study.objects.get(slug="agents")
    group = make_group(study, "g", [alice, bob])
    Conversation.objects.filter(study=study).assign(group)
    return study


def test_an_agent_episode_is_labelled_on_six_axes_with_an_evidence_span(
    browser, live_server, tmp_path, episode, alice, bob
):
    first, second = Conversation.objects.get(study=episode).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, second)
    # the six axes, each a block with its rule
    legends = page.locator("#card fieldset.axis > legend").all_inner_texts()
    assert [legend.split(" (")[0] for legend in legends] == [
        "Symptom",
        "Cause",
        "Damage severity",
        "Damage locus",
        "Resolution status",
        "Resolver",
    ]
    assert "pick one" in legends[2] and "at most 2" in legends[1]
    assert "only when Damage severity is DS2 or DS3" in legends[3]

    # the evidence: text selected in the earlier turn's reply, quoted with '
    page.keyboard.press("c")
    page.wait_for_selector(f'.text[data-turn-id="{first.pk}"][data-part="reply"]')
    assert page.evaluate(SELECT_JS, [first.pk, "reply", "rounded twice"]) == "rounded twice"
    page.keyboard.press("'")
    figure = page.wait_for_selector("#evidence-box figure.evidence-quote")
    assert "Evidence quoted from turn 1, reply" in figure.inner_text()
    assert page.locator("#evidence-box blockquote").inner_text() == "rounded twice"
    assert axe_violations(page) == []  # the six axis blocks and the quote, as shown now

    # one type per axis by its key; severity is pick-one: its second key replaces the first
    for code in (
        "inaccurate_self_reporting",
        "underspecified_instruction",
        "DS1",
        "DS2",
        "code_or_task",
        "visible",
        "RV2",
    ):
        page.keyboard.press(key_of(page, code))
    chosen = {
        "inaccurate_self_reporting",
        "underspecified_instruction",
        "DS2",
        "code_or_task",
        "visible",
        "RV2",
    }
    assert checked_codes(page) == chosen
    page.keyboard.press("Enter")
    # the next card (alice's first, not labelled yet) or the done page
    page.wait_for_function(
        "id => document.querySelector('#card')?.dataset.turnId !== String(id)", arg=second.pk
    )
    stored = Annotation.objects.get(turn=second, annotator=alice)
    start = first.reply_text.index("rounded twice")
    assert stored.codes == chosen
    assert (stored.evidence, stored.evidence_turn_id, stored.evidence_part) == (
        "rounded twice",
        first.pk,
        "reply",
    )
    assert (stored.evidence_start, stored.evidence_end) == (start, start + len("rounded twice"))
    assert errors == []
    context.close()

    # bob labels too: the export splits the labels by axis, the report has a section per axis
    label(second, bob, "inaccurate_self_reporting", "DS2", "code_or_task", "visible", "RV1")
    path = tmp_path / "raw.jsonl"
    exports.write_raw(episode, path, "jsonl")
    rows = {r["annotator"]: r for r in map(json.loads, path.read_text().splitlines())}
    assert rows["alice"]["symptom_labels"] == ["inaccurate_self_reporting"]
    assert rows["alice"]["cause_labels"] == ["underspecified_instruction"]
    assert rows["alice"]["damage_severity_label"] == "DS2"
    assert rows["alice"]["damage_locus_label"] == "code_or_task"
    assert rows["alice"]["resolver_label"] == "RV2"
    assert rows["bob"]["resolver_label"] == "RV1"
    assert (rows["alice"]["evidence_turn"], rows["alice"]["evidence_part"]) == (1, "reply")
    gold = tmp_path / "gold.jsonl"
    exports.write_gold(episode, gold, "jsonl")
    (row, _) = sorted(map(json.loads, gold.read_text().splitlines()), key=lambda r: -r["turn"])
    assert {
        "symptom_labels",
        "cause_labels",
        "damage_severity_label",
        "damage_locus_label",
        "resolution_status_label",
        "resolver_label",
    } <= set(row)

    lead = make_user("lead")
    episode.add_member(lead, Role.LEAD, Kind.EXPERT)
    Job.objects.create(
        study=episode,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=compute_study_report(episode, n_boot=0),
        finished_at=timezone.now(),
    )
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(live_server.url + reverse("report", args=[episode.slug]))
    headings = page.locator("section.axis > h2").all_inner_texts()
    assert headings == [
        "Axis: Symptom",
        "Axis: Cause",
        "Axis: Damage severity",
        "Axis: Damage locus",
        "Axis: Resolution status",
        "Axis: Resolver",
    ]
    assert errors == []
    context.close()


def test_a_third_cause_is_refused_on_the_page_naming_the_axis(browser, live_server, episode, alice):
    """Issue 21 point 5: cause takes at most 2 types; the page used to accept a third tick
    (the server then refused the card with the raw codes). By key or by click, the third is
    undone, a message names the axis and the limit, and the first two stay; the keys still
    work once one is unticked."""
    _, second = Conversation.objects.get(study=episode).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, second)
    limit = page.locator("#card [data-axis-limit]")
    assert limit.is_hidden()
    two = {"instruction_following_failure", "underspecified_instruction"}
    for code in sorted(two):
        page.keyboard.press(key_of(page, code))
    page.keyboard.press(key_of(page, "other_indeterminate"))
    assert checked_codes(page) == two
    assert limit.is_visible()
    said = limit.inner_text()
    assert said.startswith("Cause: at most 2 types.") and "Other / Indeterminate" in said
    page.locator('#card label.type-toggle:has(input[value="other_indeterminate"])').click()
    assert checked_codes(page) == two  # a click is refused the same way
    # untick one by its key: the message goes, and the third can now be ticked by its key
    page.keyboard.press(key_of(page, "underspecified_instruction"))
    assert limit.is_hidden()
    page.keyboard.press(key_of(page, "other_indeterminate"))
    assert checked_codes(page) == {"instruction_following_failure", "other_indeterminate"}
    assert axe_violations(page) == []
    assert errors == []
    context.close()


class Axis:
    """An axis block of the card: disabled (the fieldset) or not."""

    def __init__(self, page, code: str):
        self.page, self.selector = page, f'#card fieldset.axis[data-axis="{code}"]'

    def is_disabled(self) -> bool:
        return self.page.eval_on_selector(self.selector, "e => e.disabled")

    def is_enabled(self) -> bool:
        return not self.is_disabled()


def test_an_axis_with_a_condition_waits_until_it_holds(browser, live_server, episode, alice):
    """Issue 21 point 5: damage locus is labelled only when the severity is above DS1, the
    resolver only when the resolution is visible. Until then the axis is disabled (its keys
    tick nothing); when the condition stops holding its tick is cleared; the server checks
    the same (tests/taxonomy/test_check_selection.py)."""
    _, second = Conversation.objects.get(study=episode).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, second)
    locus = Axis(page, "damage_locus")
    resolver = Axis(page, "resolver")
    assert locus.is_disabled() and resolver.is_disabled()
    page.keyboard.press(key_of(page, "project"))
    page.keyboard.press(key_of(page, "RV2"))
    assert checked_codes(page) == set()  # their keys tick nothing yet
    page.keyboard.press(key_of(page, "DS3"))
    assert locus.is_enabled()
    page.keyboard.press(key_of(page, "project"))
    assert checked_codes(page) == {"DS3", "project"}
    # DS1 replaces DS3: the locus no longer applies, its tick goes
    page.keyboard.press(key_of(page, "DS1"))
    assert checked_codes(page) == {"DS1"} and locus.is_disabled()
    page.keyboard.press(key_of(page, "DS2"))
    page.keyboard.press(key_of(page, "external"))
    page.keyboard.press(key_of(page, "visible"))
    page.keyboard.press(key_of(page, "RV1"))
    chosen = {"DS2", "external", "visible", "RV1"}
    assert checked_codes(page) == chosen
    assert axe_violations(page) == []
    page.keyboard.press("Enter")
    page.wait_for_function(
        "id => document.querySelector('#card')?.dataset.turnId !== String(id)", arg=second.pk
    )
    assert Annotation.objects.get(turn=second, annotator=alice).codes == chosen
    assert errors == []
    context.close()


SELECT_ANY_JS = SELECT_JS.replace(
    'const message = document.querySelector(`.text[data-turn-id="${turnId}"][data-part="${part}"]`);\n'
    "  const walker = document.createTreeWalker(message, NodeFilter.SHOW_TEXT);",
    'const messages = document.querySelectorAll(`.text[data-turn-id="${turnId}"][data-part="${part}"]`);\n'
    "  const message = Array.from(messages).find(m => m.textContent.includes(words));\n"
    "  const walker = document.createTreeWalker(message, NodeFilter.SHOW_TEXT);",
)


def test_the_reply_reads_in_the_logs_order_and_its_later_text_can_be_quoted(
    browser, live_server, episode, alice
):
    """Issue 21 point 7: turn 1's reply is thinking, text, a Bash call, its result, text; the
    card shows them in that order, and a quote from the text after the tool call gets its
    span in the stored reply text."""
    assert SELECT_ANY_JS != SELECT_JS
    first, _ = Conversation.objects.get(study=episode).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, first)
    order = page.eval_on_selector_all(
        "#card section.turn .message.reply > .text, #card section.turn .message.reply > details.part",
        "els => els.map(e => e.dataset.kind || e.textContent.trim().slice(0, 12))",
    )
    assert order == ["thinking", "Let me run t", "tool_call", "tool_result", "The total is"]
    assert page.evaluate(SELECT_ANY_JS, [first.pk, "reply", "rounded twice"]) == "rounded twice"
    page.keyboard.press("'")
    figure = page.wait_for_selector("#evidence-box figure.evidence-quote")
    start = first.reply_text.index("rounded twice")
    assert f"characters {start}–{start + len('rounded twice')}" in figure.inner_text()
    assert errors == []
    context.close()


def test_text_selected_inside_a_tool_result_is_quoted_with_its_part(
    browser, live_server, episode, alice
):
    """Issue 21 point 7: evidence can be quoted from a tool result. Alice unfolds turn 1's
    Bash result, selects text in it and presses '; the server finds it in that part's stored
    text, the box names the part, and the submitted label keeps (turn, part, part index,
    span), checked again by the server."""
    first, _ = Conversation.objects.get(study=episode).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, first)
    page.click('#card details.part[data-kind="tool_result"] > summary')
    result = page.locator(f'#card .text[data-turn-id="{first.pk}"][data-part="tool_result"]')
    index = int(result.get_attribute("data-part-index"))
    assert page.evaluate(SELECT_ANY_JS, [first.pk, "tool_result", "1 failed"]) == "1 failed"
    page.keyboard.press("'")
    figure = page.wait_for_selector("#evidence-box figure.evidence-quote")
    assert f"Evidence quoted from turn 1, tool result (part {index})" in figure.inner_text()
    assert page.locator("#evidence-box blockquote").inner_text() == "1 failed"
    page.keyboard.press(key_of(page, "operational_execution_error"))
    page.keyboard.press("Enter")
    page.wait_for_function(
        "id => document.querySelector('#card')?.dataset.turnId !== String(id)", arg=first.pk
    )
    stored = Annotation.objects.get(turn=first, annotator=alice)
    text = reply_part_text(first.reply_parts[index])
    start = text.index("1 failed")
    assert stored.span == EvidenceSpan(first.pk, "tool_result", start, start + 8, index)
    assert stored.evidence == "1 failed"
    assert errors == []
    context.close()
