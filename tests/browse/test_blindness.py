"""Round 1 is blind for whoever annotates a card, lead or not: a lead who labels a card in
their own group sees nobody else's labels on it (in any group), nor a consensus or study
gold that would give them away, until the card has left round 1 in their group."""

from __future__ import annotations

import pytest

from tests.factories import AMBIGUOUS, INCOMPLETE, ROLLBACK, label, make_group

from .helpers import card_html, conversation_url, group_html, make_browsable


@pytest.fixture
def lead_annotates(study, lead, alice, dave, erin):
    """The lead labels in G1 with alice; G2 (dave, erin) shares the conversation."""
    g1 = make_group(study, "G1", [alice])
    g1.annotators.add(lead)
    g2 = make_group(study, "G2", [dave, erin])
    conversation = make_browsable(study, "shared", n_turns=2, groups=[g1, g2])
    return g1, g2, conversation


def test_a_lead_who_annotates_sees_no_labels_while_the_card_is_in_round_1_for_them(
    lead_client, lead_annotates, alice, dave, erin
):
    g1, g2, conversation = lead_annotates
    t1 = conversation.turns.get(index=1)
    label(t1, alice, ROLLBACK, note="alice alone")
    label(t1, dave, INCOMPLETE, note="dave in G2")
    label(t1, erin, INCOMPLETE)  # agreed in G2: its labels would be shown to another lead
    response = lead_client.get(conversation_url(conversation))
    card = card_html(response, 1)
    assert "data-code=" not in card
    assert "alice alone" not in response.text and "dave in G2" not in response.text
    assert 'data-status="agreed"' in group_html(card, g2)  # the state, not the labels
    assert "Consensus" not in card
    assert "you label this card" in group_html(card, g2)


def test_once_round_1_is_over_in_their_group_the_lead_sees_every_groups_labels(
    lead_client, lead_annotates, lead, alice, dave, erin
):
    g1, g2, conversation = lead_annotates
    t1 = conversation.turns.get(index=1)
    label(t1, alice, ROLLBACK)
    label(t1, dave, INCOMPLETE)
    label(t1, erin, INCOMPLETE)
    label(t1, lead, AMBIGUOUS)  # G1 disputed: round 1 over for the lead
    card = card_html(lead_client.get(conversation_url(conversation)), 1)
    row1, row2 = group_html(card, g1), group_html(card, g2)
    assert 'data-code="code_rollback"' in row1 and 'data-code="ambiguous_instruction"' in row1
    assert 'data-code="incomplete_instruction"' in row2 and "Consensus" in row2


def test_a_lead_who_does_not_annotate_sees_the_other_groups_labels(
    client, study, lead_annotates, alice, dave, erin
):
    from annotation.models import Kind, Role
    from tests.factories import make_user

    g1, g2, conversation = lead_annotates
    other_lead = make_user("olga")
    study.add_member(other_lead, Role.LEAD, Kind.EXPERT)
    client.force_login(other_lead)
    t1 = conversation.turns.get(index=1)
    label(t1, alice, ROLLBACK)
    label(t1, dave, INCOMPLETE)
    label(t1, erin, INCOMPLETE)
    card = card_html(client.get(conversation_url(conversation)), 1)
    assert "data-code=" not in group_html(card, g1)  # G1 still in round 1
    assert 'data-code="incomplete_instruction"' in group_html(card, g2)
