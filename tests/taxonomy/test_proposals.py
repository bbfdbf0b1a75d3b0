"""Category proposals: proposing on a card, the experts' queue, and the three decisions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import (
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Kind,
    Proposal,
    ProposalStatus,
    Role,
)
from taxonomy.models import TaxonomyVersion
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
V1_CODES = {
    "ambiguous_instruction",
    "incomplete_instruction",
    "must_do_omission",
    "must_not_violation",
    "signature_mismatch",
    "cross_turn_inconsistency",
    "partial_functionality_breakdown",
    "code_rollback",
    "repetitive_response",
}


@pytest.fixture
def group(study, alice, bob):
    return make_group(study, "g1", [alice, bob])


@pytest.fixture
def turns(study, group):
    return list(make_conversation(study, "conv-a", n_turns=3, group=group).turns.all())


@pytest.fixture
def expert(db, study):
    """An expert of the study who is not a lead: a moderator of an expert kind."""
    user = make_user("erin")
    study.add_member(user, Role.MODERATOR, Kind.EXPERT)
    return user


def propose_url(study, turn):
    return reverse("propose", args=[study.slug, turn.pk])


def decide_url(study, proposal):
    return reverse("proposal_decide", args=[study.slug, proposal.pk])


def a_proposal(study, turn, user, name="Premature optimisation") -> Proposal:
    return Proposal.propose(
        study=study,
        turn=turn,
        proposer=user,
        name=name,
        definition="The reply optimises before the code works.",
        reason="None of the types is about premature work.",
    )


def current_codes(turn, user, round=1):
    a = Annotation.objects.get(turn=turn, annotator=user, round=round, is_current=True)
    return {t.code for t in a.types.all()}


# proposing


def test_it_records_a_proposal_from_the_card(client, study, alice, turns):
    client.force_login(alice)
    data = {"name": "Premature optimisation", "definition": "Optimises first.", "reason": "None"}
    r = client.post(propose_url(study, turns[1]), data, **HX)
    html = r.content.decode()
    assert r.status_code == 200
    assert html.lstrip().startswith('<div id="propose"') and "<html" not in html
    assert "Proposal sent" in html and "Premature optimisation" in html
    p = Proposal.objects.get()
    assert (p.study, p.turn, p.proposer, p.status) == (study, turns[1], alice, "pending")
    assert p.axis == study.taxonomy_version.axes.first()
    assert p.created_version == study.taxonomy_version


@pytest.mark.parametrize(
    "missing, message",
    [
        ("name", "Give the type a name."),
        ("definition", "Say what the type means"),
        ("reason", "Say why none of the existing types fits."),
    ],
)
def test_it_refuses_a_proposal_without_name_definition_or_reason(
    client, study, alice, turns, missing, message
):
    client.force_login(alice)
    data = {"name": "X", "definition": "Y", "reason": "Z", missing: "  "}
    r = client.post(propose_url(study, turns[0]), data, **HX)
    assert message in r.content.decode()
    assert not Proposal.objects.exists()
    r = client.post(propose_url(study, turns[0]), data)
    assert r.status_code == 422 and message in r.content.decode()


def test_charlie_cannot_propose_on_a_card_outside_his_groups(client, study, charlie, lead, turns):
    make_group(study, "g2", [charlie])
    data = {"name": "X", "definition": "Y", "reason": "Z"}
    client.force_login(charlie)
    assert client.post(propose_url(study, turns[0]), data).status_code == 404
    # a lead is not an annotator of the card's group either
    client.force_login(lead)
    assert client.post(propose_url(study, turns[0]), data).status_code == 404
    assert not Proposal.objects.exists()


def test_the_card_has_a_separate_collapsed_propose_form(client, study, alice, turns):
    client.force_login(alice)
    html = client.get(reverse("card", args=[study.slug, turns[0].pk])).content.decode()
    labels_form = html.index('<form class="types"')
    propose_form = html.index(f'action="{propose_url(study, turns[0])}"')
    # the labels form is closed before the proposal form opens, and comes first (labels.js
    # submits the card's first form on Enter)
    assert labels_form < html.index("</form>", labels_form) < propose_form
    assert "<details>\n    <summary>None fits? Propose a new type</summary>" in html


# the queue


def test_students_get_403_and_outsiders_404_for_the_queue(client, study, alice, charlie, turns):
    url = reverse("proposals", args=[study.slug])
    client.force_login(alice)  # a student member: told it is for leads and experts
    assert client.get(url).status_code == 403
    a_proposal(study, turns[0], alice)
    p = Proposal.objects.get()
    assert (
        client.post(decide_url(study, p), {"action": "reject", "reason": "no"}).status_code == 403
    )
    client.force_login(charlie)
    assert client.get(url).status_code == 404
    assert Proposal.objects.get().status == ProposalStatus.PENDING


def test_experts_see_pending_proposals_first_with_counts(client, study, alice, expert, turns):
    old = a_proposal(study, turns[0], alice, name="Old and rejected")
    old.reject(expert, reason="too vague")
    a_proposal(study, turns[1], alice, name="Waiting one")
    client.force_login(expert)
    r = client.get(reverse("proposals", args=[study.slug]))
    html = r.content.decode()
    assert r.status_code == 200
    assert html.index("Waiting one") < html.index("Old and rejected")
    assert "1 pending · 0 accepted · 0 mapped · 1 rejected" in html
    assert "too vague" in html


# accept


def test_accept_makes_version_2_with_the_type_and_the_study_uses_it(
    client, study, alice, lead, turns
):
    v1 = study.taxonomy_version
    p = a_proposal(study, turns[0], alice)
    client.force_login(lead)
    r = client.post(
        decide_url(study, p), {"action": "accept", "category": "", "confirm": "1"}, **HX
    )
    assert r.status_code == 200 and "accepted" in r.content.decode()
    study.refresh_from_db()
    v2 = study.taxonomy_version
    assert (v2.number, v2.parent, v2.frozen) == (2, v1, True)
    assert v2.code_map() == {code: [code] for code in V1_CODES}
    new = v2.types_by_code()
    assert set(new) == V1_CODES | {"premature_optimisation"}
    added = new["premature_optimisation"]
    assert added.category.name == "Proposed"
    assert added.definition == "The reply optimises before the code works."
    assert added.hotkey == "a"  # 1-9 are all taken in this taxonomy: the first letter
    # version 1 is untouched, still frozen
    assert set(v1.types_by_code()) == V1_CODES and v1.frozen
    p.refresh_from_db()
    assert (p.status, p.new_version, p.new_code, p.decided_by) == (
        "accepted",
        v2,
        "premature_optimisation",
        lead,
    )


def test_accept_into_an_existing_category(study, alice, lead, turns):
    p = a_proposal(study, turns[0], alice, name="Code rollback")
    p.accept(lead, category="Historical Response Violation")
    study.refresh_from_db()
    added = study.taxonomy_version.types_by_code()["code_rollback_2"]  # codes are never reused
    assert added.category.name == "Historical Response Violation"
    assert not study.taxonomy_version.axes.get().categories.filter(name="Proposed").exists()


def test_accept_sends_an_agreed_card_back_to_its_annotators(study, alice, bob, lead, turns):
    label(turns[0], alice, "code_rollback")
    label(turns[0], bob, "code_rollback")
    consensus = Consensus.objects.get(turn=turns[0], is_current=True)
    p = a_proposal(study, turns[0], alice)
    outcome = p.accept(lead)
    state = CardState.objects.get(turn=turns[0])
    assert (state.status, state.round) == (CardStatus.DISPUTED, 2)
    consensus.refresh_from_db()
    assert not consensus.is_current  # kept as history
    assert "went back to its annotators (round 2)" in outcome
    # round 2 is open: alice can now label with the new type
    label(turns[0], alice, "code_rollback", "premature_optimisation", round=2)
    assert current_codes(turns[0], alice, round=2) == {"code_rollback", "premature_optimisation"}
    assert current_codes(turns[0], alice, round=1) == {"code_rollback"}


def test_annotators_can_pick_the_new_type_on_the_card(client, study, alice, bob, lead, turns):
    a_proposal(study, turns[0], alice).accept(lead)
    client.force_login(bob)
    url = reverse("card", args=[study.slug, turns[1].pk])
    assert 'value="premature_optimisation"' in client.get(url).content.decode()
    client.post(url, {"types": ["premature_optimisation", "code_rollback"]}, **HX)
    assert current_codes(turns[1], bob) == {"premature_optimisation", "code_rollback"}


# map


def test_map_never_writes_the_proposers_labels_and_tells_them(client, study, alice, expert, turns):
    first = label(turns[0], alice, "code_rollback")
    p = a_proposal(study, turns[0], alice)
    client.force_login(expert)
    data = {"action": "map", "code": "repetitive_response", "reason": "It repeats itself."}
    r = client.post(decide_url(study, p), data)
    assert r.status_code == 302
    assert list(Annotation.objects.filter(annotator=alice)) == [first]  # nothing written
    first.refresh_from_db()
    assert first.is_current and current_codes(turns[0], alice) == {"code_rollback"}
    p.refresh_from_db()
    assert (p.status, p.mapped_to_code, p.decision_reason) == (
        "mapped",
        "repetitive_response",
        "It repeats itself.",
    )
    # the proposer is told, on the study page, by the type's name
    client.force_login(alice)
    html = client.get(reverse("study", args=[study.slug])).content.decode()
    assert 'class="proposal mapped decided"' in html
    assert "Repetitive Response" in html and "It repeats itself." in html
    assert "pre-ticked; nothing is stored until alice submits" in html


def test_map_on_a_card_the_proposer_never_labelled_creates_no_round_1_label(
    study, alice, bob, expert, turns
):
    p = a_proposal(study, turns[0], alice)
    p.map_to(expert, "code_rollback")
    assert not Annotation.objects.filter(annotator=alice).exists()
    label(turns[0], bob, "must_do_omission")
    # round 1 is still waiting for alice's own judgment: the mapping did not close it
    assert CardState.objects.get(turn=turns[0]).status == CardStatus.OPEN
    assert not Consensus.objects.exists()


def test_the_mapped_type_is_pre_ticked_on_the_card_until_the_proposer_submits(
    client, study, alice, expert, turns
):
    label(turns[0], alice, "code_rollback")
    a_proposal(study, turns[0], alice).map_to(expert, "repetitive_response")
    client.force_login(alice)
    url = reverse("card", args=[study.slug, turns[0].pk])
    html = client.get(url).content.decode()
    assert 'value="repetitive_response" checked' in html.replace(' data-hotkey="9"', "")
    assert 'value="code_rollback" checked' in html.replace(' data-hotkey="8"', "")
    assert "pre-ticked" in html
    assert Annotation.objects.filter(annotator=alice).count() == 1  # showing stores nothing
    client.post(url, {"types": ["code_rollback"]}, **HX)  # alice keeps her own set
    assert current_codes(turns[0], alice) == {"code_rollback"}
    html = client.get(url).content.decode()
    assert "pre-ticked" not in html


def test_the_queue_brings_the_proposer_back_to_a_suggested_card(
    client, study, alice, expert, turns
):
    for turn in turns:
        label(turn, alice, "code_rollback")
    a_proposal(study, turns[1], alice).map_to(expert, "repetitive_response")
    client.force_login(alice)
    r = client.get(reverse("queue", args=[study.slug]))
    assert r.status_code == 302 and r.url == reverse("card", args=[study.slug, turns[1].pk])


def test_map_on_a_closed_round_changes_no_labels(study, alice, bob, expert, turns):
    label(turns[0], alice, "code_rollback")
    label(turns[0], bob, "code_rollback")  # agreed: no round is open
    p = a_proposal(study, turns[0], alice)
    outcome = p.map_to(expert, "repetitive_response")
    assert "The card is agreed, so its labels stay as they are." in outcome
    assert current_codes(turns[0], alice) == {"code_rollback"}
    assert Annotation.objects.filter(turn=turns[0], annotator=alice).count() == 1
    p.refresh_from_db()
    assert (p.status, p.mapped_to_code, p.outcome) == ("mapped", "repetitive_response", outcome)


def test_map_refuses_an_unknown_code(client, study, alice, lead, turns):
    p = a_proposal(study, turns[0], alice)
    client.force_login(lead)
    r = client.post(decide_url(study, p), {"action": "map", "code": "nope"})
    assert r.status_code == 422 and "unknown type code" in r.content.decode()
    assert Proposal.objects.get().status == "pending"


# reject and double decisions


def test_reject_needs_a_reason(client, study, alice, lead, turns):
    p = a_proposal(study, turns[0], alice)
    client.force_login(lead)
    r = client.post(decide_url(study, p), {"action": "reject", "reason": " "}, **HX)
    assert "A reason is required" in r.content.decode()
    assert Proposal.objects.get().status == "pending"
    client.post(decide_url(study, p), {"action": "reject", "reason": "Covered by must_do."}, **HX)
    p.refresh_from_db()
    assert (p.status, p.decision_reason, p.decided_by) == ("rejected", "Covered by must_do.", lead)
    assert p.decided_at is not None


def test_a_second_decision_is_refused_and_changes_nothing(
    client, study, alice, lead, expert, turns
):
    p = a_proposal(study, turns[0], alice)
    client.force_login(lead)
    client.post(decide_url(study, p), {"action": "accept", "confirm": "1"}, **HX)
    client.force_login(expert)
    r = client.post(decide_url(study, p), {"action": "reject", "reason": "late"})
    html = r.content.decode()
    assert r.status_code == 409
    assert "already accepted by lead" in html and "nothing was changed" in html
    p.refresh_from_db()
    assert (p.status, p.decided_by, p.decision_reason) == ("accepted", lead, "")
    assert TaxonomyVersion.objects.count() == 2
    r = client.post(decide_url(study, p), {"action": "accept", "confirm": "1"}, **HX)
    assert "already accepted" in r.content.decode()
    assert TaxonomyVersion.objects.count() == 2


def test_the_study_page_lists_my_newest_ten_proposals(client, study, alice, bob, turns):
    for i in range(12):
        a_proposal(study, turns[0], alice, name=f"Idea {i:02d}")
    a_proposal(study, turns[0], bob, name="Bob's idea")
    client.force_login(alice)
    html = client.get(reverse("study", args=[study.slug])).content.decode()
    assert "Idea 11" in html and "Idea 02" in html and "Idea 01" not in html
    assert "Bob" not in html
    assert "Proposals queue" not in html  # alice is a student


def test_map_in_round_2_pre_ticks_the_discussion_form_and_writes_nothing(
    client, study, alice, bob, lead, turns
):
    label(turns[0], alice, "code_rollback")
    label(turns[0], bob, "must_do_omission")  # disputed: round 2 is open
    p = a_proposal(study, turns[0], alice)
    outcome = p.map_to(lead, "repetitive_response")
    assert "pre-ticked" in outcome
    assert not Annotation.objects.filter(annotator=alice, round=2).exists()
    assert current_codes(turns[0], alice, round=1) == {"code_rollback"}
    client.force_login(alice)
    html = client.get(reverse("discussion", args=[study.slug, turns[0].pk])).content.decode()
    form = html[html.index('id="revise"') :]
    assert 'value="repetitive_response"' in form
    assert 'value="repetitive_response" checked' in form.replace(' data-hotkey="9"', "")


def test_accept_suggests_the_new_type_to_the_proposer_without_labelling(
    client, study, alice, lead, turns
):
    p = a_proposal(study, turns[0], alice)
    outcome = p.accept(lead)
    assert "pre-ticked" in outcome
    assert not Annotation.objects.filter(annotator=alice).exists()
    client.force_login(alice)
    html = client.get(reverse("card", args=[study.slug, turns[0].pk])).content.decode()
    assert "premature_optimisation" in html and "pre-ticked" in html
