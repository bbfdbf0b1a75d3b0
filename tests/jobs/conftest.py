"""A small labelled study for the agreement and export jobs: two groups, multi-label sets,
"no smell", a card with one annotator's label only, and a second round."""

from __future__ import annotations

import pytest

from tests.factories import (
    AMBIGUOUS,
    INCOMPLETE,
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_user,
)


@pytest.fixture
def eager(settings, media):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


@pytest.fixture
def labelled(study, alice, bob, charlie):
    """Round 1: c1#1 identical pair (agreed), c1#2 differs (disputed; agreed in round 2),
    c1#3 both "no smell" (agreed), c1#4 alice only; c2#1 differs, c2#2 charlie only."""
    dave = make_user("dave")
    g1 = make_group(study, "g1", [alice, bob])
    g2 = make_group(study, "g2", [charlie, dave])
    c1 = make_conversation(study, "c1", n_turns=4, group=g1)
    c2 = make_conversation(study, "c2", n_turns=2, group=g2)
    t1, t2, t3, t4 = c1.turns.all()
    u1, u2 = c2.turns.all()
    label(t1, alice, AMBIGUOUS, ROLLBACK)
    label(t1, bob, ROLLBACK, AMBIGUOUS)
    label(t2, alice, AMBIGUOUS)
    label(t2, bob, INCOMPLETE)
    label(t3, alice)
    label(t3, bob)
    label(t4, alice, ROLLBACK)
    label(u1, charlie)
    label(u1, dave, INCOMPLETE)
    label(u2, charlie, INCOMPLETE)
    label(t2, alice, INCOMPLETE, round=2)
    label(t2, bob, INCOMPLETE, round=2)
    label(u1, charlie, INCOMPLETE, round=2)
    return {"t": [t1, t2, t3, t4], "u": [u1, u2], "dave": dave, "groups": (g1, g2)}
