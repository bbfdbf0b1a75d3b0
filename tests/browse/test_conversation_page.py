"""One conversation for the lead: every card with its text, its state in each group, and,
once the card has left round 1 in a group, that group's labels, its consensus and the
study-level gold. A card still in round 1 shows no labels."""

from __future__ import annotations

import re

import pytest
from django.utils.html import strip_tags

from annotation.models import CardState, CardStatus, StudyGold, Turn
from tests.factories import AMBIGUOUS, INCOMPLETE, ROLLBACK, label, make_study, types_of

from .helpers import browse_url, card_html, conversation_url, group_html, listed, make_browsable


@pytest.fixture
def shared(study, groups):
    """A conversation of three cards that G1 and G2 both label."""
    return make_browsable(
        study,
        "shared",
        groups=list(groups),
        metadata={"model": "gpt-4-0314", "language": "English"},
        texts={1: ("Fix `parse()`", "```python\ndef parse(s):\n    return s.split()\n```")},
    )


def test_it_shows_every_card_with_its_text(lead_client, shared):
    response = lead_client.get(conversation_url(shared))
    for i in (1, 2, 3):
        card = card_html(response, i)
        assert f"Turn {i} of 3" in card
    first = card_html(response, 1)
    assert "Fix <code>parse()</code>" in first or "Fix `parse()`" in first
    assert "<pre" in first and "def parse(s):" in strip_tags(first)  # highlighted: spans
    assert "shared" in response.text and "gpt-4-0314" in response.text


def test_it_folds_tool_calls_and_results(lead_client, study):
    conversation = make_browsable(study, "agent", n_turns=1)
    Turn.objects.filter(conversation=conversation).update(
        reply_parts=[
            {"type": "tool_call", "name": "read_file", "arguments": '{"path": "app.py"}'},
            {"type": "tool_result", "name": "read_file", "content": "print('hi')"},
        ]
    )
    card = card_html(lead_client.get(conversation_url(conversation)), 1)
    assert card.count("<details") == 2
    assert "read_file" in card and "app.py" in card and "print(&#x27;hi&#x27;)" in card


def test_it_shows_each_groups_state_with_open_for_no_state_row(
    lead_client, shared, groups, alice, bob, dave
):
    g1, g2 = groups
    t1 = shared.turns.get(index=1)
    label(t1, alice, ROLLBACK)
    label(t1, bob, AMBIGUOUS)  # disputed in G1, round 2
    label(t1, dave, ROLLBACK)  # still open in G2
    card = card_html(lead_client.get(conversation_url(shared)), 1)
    assert 'data-status="disputed"' in group_html(card, g1)
    assert "round 2" in group_html(card, g1)
    assert 'data-status="open"' in group_html(card, g2)
    other = card_html(lead_client.get(conversation_url(shared)), 2)
    assert 'data-status="open"' in group_html(other, g1)  # nobody labelled: no row


def test_a_card_in_round_1_shows_no_labels(lead_client, shared, groups, alice, dave):
    g1, g2 = groups
    t1 = shared.turns.get(index=1)
    label(t1, alice, ROLLBACK, note="alice's secret note")
    label(t1, dave, INCOMPLETE)
    response = lead_client.get(conversation_url(shared))
    card = card_html(response, 1)
    assert "data-code=" not in card
    assert "alice's secret note" not in response.text
    assert "labels hidden until the card leaves round 1" in group_html(card, g1)


def test_after_round_1_it_shows_each_annotators_labels_and_the_consensus(
    lead_client, shared, groups, alice, bob, dave, erin
):
    g1, g2 = groups
    t1 = shared.turns.get(index=1)
    label(t1, alice, ROLLBACK)
    label(t1, bob, ROLLBACK, AMBIGUOUS)  # disputed in G1
    label(t1, dave, INCOMPLETE)
    label(t1, erin, INCOMPLETE)  # agreed in G2, unanimous
    card = card_html(lead_client.get(conversation_url(shared)), 1)
    row1 = group_html(card, g1)
    assert re.search(r"alice.*round 1.*data-code=\"code_rollback\"", row1, re.S)
    assert 'data-code="ambiguous_instruction"' in row1
    assert "Consensus" not in row1  # disputed: none yet
    row2 = group_html(card, g2)
    assert 'data-status="agreed"' in row2
    assert "dave" in row2 and "erin" in row2
    assert "Consensus" in row2 and "unanimous" in row2
    assert 'data-code="incomplete_instruction"' in row2
    assert 'data-code="code_rollback"' not in row2  # each group shows only its own labels


def test_it_shows_the_current_labels_of_each_round(lead_client, shared, groups, alice, bob):
    g1, _ = groups
    t1 = shared.turns.get(index=1)
    label(t1, alice, ROLLBACK)
    label(t1, bob, AMBIGUOUS)
    label(t1, alice, AMBIGUOUS, round=2)
    label(t1, bob, AMBIGUOUS, round=2)  # agreed by discussion
    row = group_html(card_html(lead_client.get(conversation_url(shared)), 1), g1)
    assert "round 2" in row and "discussion" in row
    alice_rounds = re.search(r'<div class="annotator" data-annotator="alice">.*?</div>', row, re.S)
    assert alice_rounds, row
    assert 'data-code="code_rollback"' in alice_rounds[0]  # round 1
    assert 'data-code="ambiguous_instruction"' in alice_rounds[0]  # round 2


def test_it_shows_the_study_gold(lead_client, shared, groups, alice, bob, dave, erin, lead):
    t1, t2 = shared.turns.get(index=1), shared.turns.get(index=2)
    for user in (alice, bob, dave, erin):
        label(t1, user, ROLLBACK)  # every group agrees: the study gold is their set
    for user in (alice, bob):
        label(t2, user, ROLLBACK)
    for user in (dave, erin):
        label(t2, user, INCOMPLETE)
    response = lead_client.get(conversation_url(shared))
    gold1 = card_html(response, 1).split('class="gold"', 1)[1]
    assert "groups agree" in gold1 and 'data-code="code_rollback"' in gold1
    gold2 = card_html(response, 2).split('class="gold"', 1)[1]
    assert "waits for your decision" in gold2
    StudyGold.decide(t2, lead, types_of(shared.study, INCOMPLETE), "G2 is right")
    gold2 = card_html(lead_client.get(conversation_url(shared)), 2).split('class="gold"', 1)[1]
    assert "decided by lead" in gold2 and 'data-code="incomplete_instruction"' in gold2
    assert "G2 is right" in gold2


def test_it_shows_groups_sharing_nothing_yet(lead_client, study):
    conversation = make_browsable(study, "lonely", n_turns=1)
    response = lead_client.get(conversation_url(conversation))
    assert "not assigned to any group" in response.text


def test_hostile_text_is_escaped(lead_client, study, groups):
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    conversation = make_browsable(
        study,
        '"><script>alert(2)</script>',
        groups=[groups[0]],
        metadata={"model": "<svg onload=alert(3)>", "language": "<b>x</b>"},
        texts={1: (hostile, "[click](javascript:alert(4))")},
    )
    Turn.objects.filter(conversation=conversation, index=1).update(
        reply_parts=[{"type": "tool_call", "name": "<script>", "arguments": hostile}]
    )
    listing = lead_client.get(browse_url(), {"q": "script"})
    assert listed(listing) == {conversation.external_id}
    for response in (lead_client.get(conversation_url(conversation)), listing):
        body = response.text
        assert "<script>alert" not in body
        assert "<img src=x" not in body
        assert "<svg onload" not in body
        assert 'href="javascript:' not in body
        assert "<b>x</b>" not in body


def test_another_studys_conversation_is_no_such_page(lead_client, study):
    other = make_study("s2")
    foreign = make_browsable(other, "foreign")
    response = lead_client.get(conversation_url(foreign, slug="s1"))
    assert response.status_code == 404


def test_the_card_state_says_round_and_escalation(lead_client, shared, groups):
    g1, _ = groups
    t3 = shared.turns.get(index=3)
    CardState.objects.create(turn=t3, group=g1, status=CardStatus.ESCALATED, round=2)
    row = group_html(card_html(lead_client.get(conversation_url(shared)), 3), g1)
    assert 'data-status="escalated"' in row
