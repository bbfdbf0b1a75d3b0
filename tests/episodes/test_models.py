"""An episode is a contiguous turn range within its conversation, with a confidence in
[0, 1]: the model's check (clean) and the database's constraints."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import Episode, EvidenceQuote, ExtractionRun


@pytest.fixture
def session(agents):
    return agents.conversations.get(external_id="s1")  # 4 turns


@pytest.mark.parametrize(
    "first, last, confidence, message",
    [
        (3, 2, 0.5, "not a range"),
        (0, 2, 0.5, "not a range"),
        (2, 5, 0.5, "last_turn: 5 out of range"),
        (1, 2, 1.2, "confidence: 1.2"),
    ],
)
def test_clean_names_what_is_wrong(session, first, last, confidence, message):
    with pytest.raises(ValidationError, match=message):
        Episode(
            conversation=session, first_turn=first, last_turn=last, confidence=confidence
        ).clean()


def test_a_range_within_the_conversation_is_clean(session):
    Episode(conversation=session, first_turn=2, last_turn=4, confidence=0.0).clean()


@pytest.mark.parametrize(
    "fields", [{"first_turn": 3, "last_turn": 2}, {"confidence": -0.1}, {"first_turn": 0}]
)
def test_the_database_refuses_what_clean_refuses(session, fields):
    values = {"conversation": session, "first_turn": 1, "last_turn": 2} | fields
    with pytest.raises(IntegrityError), transaction.atomic():
        Episode.objects.create(**values)


def test_episodes_may_overlap_and_a_quote_span_must_not_be_empty(agents, session):
    run = ExtractionRun.objects.create(study=agents, name="r")
    a = Episode.objects.create(conversation=session, run=run, first_turn=1, last_turn=3)
    Episode.objects.create(conversation=session, run=run, first_turn=2, last_turn=4)
    turn = session.turns.get(index=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        EvidenceQuote.objects.create(episode=a, turn=turn, part="user", start=4, end=4, quote="")
    with pytest.raises(IntegrityError), transaction.atomic():
        ExtractionRun.objects.create(study=agents, name="r")
