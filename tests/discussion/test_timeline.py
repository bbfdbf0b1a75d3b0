"""A card's timeline: every label revision, comment, consensus and proposal, in time order,
with a query count that does not grow with the history."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, CardState, Comment, Consensus, Proposal
from tests.factories import label, study_url

pytestmark = pytest.mark.django_db


def kinds(html: str) -> list[str]:
    return re.findall(r'data-kind="(\w+)"', html)


def test_it_shows_every_change_in_order(client, alice, bob, moderator, disputed):
    label(disputed, alice, "signature_mismatch", round=2)
    Comment.objects.create(
        turn=disputed,
        group=disputed.conversation.groups.get(),
        author=bob,
        round=2,
        text="Why signature?",
    )
    label(disputed, alice, "must_do_omission", round=2, note="changed my mind")
    label(disputed, bob, "must_do_omission", round=2)
    state = CardState.objects.get(turn=disputed)
    state.reopen()  # the discussion consensus stays in the history, no longer current
    CardState.decide(disputed, state.group, moderator, [], "no smell after all")

    client.force_login(alice)
    response = client.get(study_url("card_timeline", disputed))
    assert response.status_code == 200
    html = response.content.decode()
    assert kinds(html) == [
        "annotation",  # alice round 1
        "annotation",  # bob round 1
        "annotation",  # alice round 2, revised later
        "comment",
        "annotation",  # alice round 2, current
        "annotation",  # bob round 2
        "consensus",  # discussion, no longer current
        "consensus",  # moderator
    ]
    assert html.count("revised later") == 1
    assert html.count("no longer current") == 1
    assert "Why signature?" in html and "no smell after all" in html
    assert "Discussion" in html and "Moderator</strong> by moderator" in html
    assert Annotation.objects.filter(turn=disputed).count() == 5
    assert Consensus.objects.filter(turn=disputed).count() == 2


def test_it_shows_proposals_on_the_card(client, study, alice, bob, disputed):
    Proposal.propose(
        study=study,
        turn=disputed,
        proposer=bob,
        name="Overconfident claim",
        definition="The reply claims certainty it lacks.",
        reason="none fits",
    )
    client.force_login(alice)
    html = client.get(study_url("card_timeline", disputed)).content.decode()
    assert kinds(html)[-1] == "proposal"
    assert "<strong>bob</strong> proposed a new type: <strong>Overconfident claim</strong>" in html


def timeline_queries(client, turn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(study_url("card_timeline", turn))
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_it_keeps_the_timeline_queries_constant(client, alice, bob, moderator, disputed):
    client.force_login(moderator)
    small = timeline_queries(client, disputed)
    for i in range(8):
        label(disputed, alice, "signature_mismatch" if i % 2 else "code_rollback", round=2)
        Comment.objects.create(
            turn=disputed,
            group=disputed.conversation.groups.get(),
            author=bob,
            round=2,
            text=f"comment {i}",
        )
    label(disputed, bob, "code_rollback", round=2)
    CardState.objects.get(turn=disputed).reopen()
    assert timeline_queries(client, disputed) == small
