"""Defects the round-rules state machine found, replayed as short plain tests: each names
the rule, runs in a second, and says what the shrunk example showed.

Both are in the REST API's PUT .../annotation/ (annotation/api/views.py), the one door of three
that disagreed with the others (the card page, the discussion page and import_annotations
accept these labels)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import (
    Annotation,
    CardState,
    CardStatus,
    Conversation,
    Kind,
    Proposal,
    Role,
)
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db


def _types(study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    return [by_code[c] for c in codes]


def _put(user, study, turn, round: int):
    api = APIClient()
    api.force_authenticate(user)
    body = {"labels": [], "round": round}
    return api.put(f"/api/studies/{study.slug}/cards/{turn.pk}/annotation/", body, format="json")


def _state(turn, group) -> tuple[str, int]:
    state = CardState.objects.get(turn=turn, group=group)
    return state.status, state.round


def test_the_api_takes_the_round_of_the_users_own_group_on_a_shared_card():
    """Group A has moved a shared card to round 2; in group B it is still open in round 1.
    B's annotator labels round 1 through the API: the round is B's, not A's."""
    study = make_study()
    alice, bob, carol, dave = (make_user(n) for n in ("alice", "bob", "carol", "dave"))
    a = make_group(study, "A", [alice, bob])
    b = make_group(study, "B", [carol, dave])
    conversation = make_conversation(study, "c1", n_turns=1, group=a)
    Conversation.objects.filter(pk=conversation.pk).assign(b)
    turn = conversation.turns.get()
    Annotation.submit(turn=turn, group=a, annotator=alice, types=_types(study, "code_rollback"))
    Annotation.submit(turn=turn, group=a, annotator=bob, types=_types(study))
    assert _state(turn, a) == (CardStatus.DISPUTED, 2)

    response = _put(carol, study, turn, 1)

    assert response.status_code == 200, response.json()
    assert _state(turn, b) == (CardStatus.OPEN, 1)
    assert Annotation.objects.current().get(turn=turn, annotator=carol).round == 1


def test_the_api_accepts_the_round_an_accepted_proposal_opened():
    """An escalated card (one discussion round, still split) goes back to its annotators
    for one more round when a proposal on it is accepted: round 3 of a study with rounds 1
    to 2. The discussion page and the import take labels in it; so must the API."""
    study = make_study()
    study.discussion_rounds = 1
    study.save(update_fields=["discussion_rounds"])
    alice, bob, lead = make_user("alice"), make_user("bob"), make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    a = make_group(study, "A", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=a).turns.get()
    for round in (1, 2):
        codes = _types(study, "code_rollback")
        Annotation.submit(turn=turn, group=a, annotator=alice, round=round, types=codes)
        Annotation.submit(turn=turn, group=a, annotator=bob, round=round, types=[])
    assert _state(turn, a) == (CardStatus.ESCALATED, 2)
    proposal = Proposal.propose(
        study=study, turn=turn, proposer=alice, name="New", definition="d", reason="r"
    )
    proposal.accept(lead)
    assert _state(turn, a) == (CardStatus.DISPUTED, 3)

    response = _put(alice, study, turn, 3)

    assert response.status_code == 200, response.json()
    assert Annotation.objects.current().get(turn=turn, annotator=alice, round=3).codes == set()
