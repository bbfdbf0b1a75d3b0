"""The API's disputes never list a card its reader still labels in round 1 in their own group,
whatever else they may discuss (a lead, who sees every group's disputes, annotating in
another group that shares the conversation), and list it once that round is over for them;
their own group's disputes are theirs to see."""

from __future__ import annotations

import pytest

from annotation.models import Conversation, Role
from tests.factories import label, make_conversation, make_group, make_user, token_client

pytestmark = pytest.mark.django_db


def _listed(user) -> set[tuple[int, str]]:
    response = token_client(user).get("/api/studies/s1/disputes/")
    assert response.status_code == 200, response.content
    return {(row["turn_id"], row["group"]) for row in response.json()["results"]}


def test_a_lead_who_labels_the_card_elsewhere_sees_its_dispute_after_round_1(
    study, alice, bob, lead
):
    mona, carl = lead, make_user("carl")
    experts = make_group(study, "experts", [alice, bob])
    students = make_group(study, "students", [mona, carl])
    shared = make_conversation(study, "shared", n_turns=1, group=experts)
    Conversation.objects.filter(pk=shared.pk).assign(students)
    turn = shared.turns.get()
    label(turn, alice, "code_rollback", group=experts)
    label(turn, bob, group=experts)  # disputed among the experts
    assert (turn.pk, "experts") in _listed(alice)
    assert study.memberships.filter(user=mona, role=Role.LEAD).exists()
    assert (turn.pk, "experts") not in _listed(mona)  # mona still labels it in round 1
    label(turn, mona, group=students)
    assert (turn.pk, "experts") not in _listed(mona)  # carl has not: still round 1 there
    label(turn, carl, group=students)  # agreed among the students: round 1 over for mona
    assert (turn.pk, "experts") in _listed(mona)
