"""A small labelled study for the agreement and export jobs: two groups, multi-label sets,
"no smell", a card with one annotator's label only, and a second round."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from tests.factories import make_conversation, make_group, make_user

AMBIGUOUS, INCOMPLETE, ROLLBACK = "ambiguous_instruction", "incomplete_instruction", "code_rollback"


def submit(turn, user, *codes, round=1):
    by_code = turn.conversation.study.taxonomy_version.types_by_code()
    return Annotation.submit(
        turn=turn,
        group=turn.conversation.groups.get(),
        annotator=user,
        round=round,
        types=[by_code[c] for c in codes],
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
    submit(t1, alice, AMBIGUOUS, ROLLBACK)
    submit(t1, bob, ROLLBACK, AMBIGUOUS)
    submit(t2, alice, AMBIGUOUS)
    submit(t2, bob, INCOMPLETE)
    submit(t3, alice)
    submit(t3, bob)
    submit(t4, alice, ROLLBACK)
    submit(u1, charlie)
    submit(u1, dave, INCOMPLETE)
    submit(u2, charlie, INCOMPLETE)
    submit(t2, alice, INCOMPLETE, round=2)
    submit(t2, bob, INCOMPLETE, round=2)
    submit(u1, charlie, INCOMPLETE, round=2)
    return {"t": [t1, t2, t3, t4], "u": [u1, u2], "dave": dave, "groups": (g1, g2)}
