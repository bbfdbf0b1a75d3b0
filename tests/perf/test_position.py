"""The card's progress, place and neighbours come from one SQL statement
(annotation/position.py), written for speed. It must say what the rules say: my cards are
the turns of the conversations assigned to my groups in the study, in (conversation, index)
order; done are those with my current round-1 label or my open-sort tag set. Hypothesis builds
random assignments (shared conversations, groups I am not in, another study, empty
conversations), labels (revised, round 2, others') and tag sets, and each example compares
position() with that rule worked out in Python from the rows, and with the ORM's
TurnQuerySet.for_annotator (the queue and My cards use it)."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Annotation, Assignment, Study, TagSet, Turn
from annotation.position import position
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db

# which groups each conversation goes to: I am in g1 and g3 (never sharing a conversation:
# Group.check_seat), not in g2; "other" is a group of another study I am in
SHARES = [(), ("g1",), ("g3",), ("g2",), ("g1", "g2"), ("g3", "g2")]

conversations = st.lists(
    st.tuples(st.sampled_from(SHARES), st.integers(min_value=0, max_value=3)),
    min_size=1,
    max_size=6,
)
# (turn number among all turns, who, what): a label of round 1, revised, of round 2, a tag set
acts = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=30),
        st.sampled_from(["me", "bob"]),
        st.sampled_from(["label", "revise", "round2", "tags"]),
    ),
    max_size=25,
)


def expected(study: Study, me, turn: Turn) -> dict:
    """The rule, from the rows in Python."""
    mine = {
        a.conversation_id
        for a in Assignment.objects.filter(conversation__study=study, group__study=study)
        if me in a.group.annotators.all()
    }
    cards = sorted(
        (t.conversation_id, t.index, t.pk) for t in Turn.objects.all() if t.conversation_id in mine
    )
    labelled = set(
        Annotation.objects.filter(annotator=me, round=1, is_current=True).values_list(
            "turn_id", flat=True
        )
    )
    tagged = set(TagSet.objects.filter(annotator=me).values_list("turn_id", flat=True))
    key = (turn.conversation_id, turn.index)
    earlier = [c for c in cards if c[:2] < key]
    later = [c for c in cards if c[:2] > key]
    return {
        "total": len(cards),
        "before": sum(1 for c in cards if c[0] < turn.conversation_id),
        "done": sum(1 for c in cards if c[2] in labelled | tagged),
        "prev_id": earlier[-1][2] if earlier else None,
        "next_id": later[0][2] if later else None,
    }


# each example rolls its rows back (the savepoint below), so the `db` fixture is shared safely
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(shares=conversations, acts=acts, at=st.integers(min_value=0, max_value=30))
def test_position_says_what_the_rule_says(db, shares, acts, at):
    with transaction.atomic():
        me, bob, carol = make_user("me"), make_user("bob"), make_user("carol")
        study, other = make_study("s1"), make_study("s2")
        groups = {
            "g1": make_group(study, "g1", [me, bob]),
            "g2": make_group(study, "g2", [carol]),
            "g3": make_group(study, "g3", [me]),
        }
        elsewhere = make_group(other, "other", [me])
        make_conversation(other, "x", n_turns=2, group=elsewhere)
        for i, (share, n_turns) in enumerate(shares):
            c = make_conversation(study, f"c{i}", n_turns=n_turns)
            for name in share:
                Assignment.objects.create(conversation=c, group=groups[name])
        turns = list(Turn.objects.order_by("pk"))  # every turn: labels and tags go anywhere
        for n, who, what in acts:
            turn = turns[n % len(turns)]
            user = me if who == "me" else bob
            if what == "tags":
                TagSet.objects.get_or_create(turn=turn, group=groups["g1"], annotator=user)
                continue
            round = 2 if what == "round2" else 1
            Annotation.record(turn=turn, annotator=user, types=[], round=round)
            if what == "revise":
                Annotation.record(turn=turn, annotator=user, types=[], round=1, note="again")
        progress = position(study, me)
        ids = list(Turn.objects.for_annotator(study, me).values_list("pk", flat=True))
        assert progress.total == len(ids)
        # a card of mine (the card pages ask for no other)
        if ids:
            turn = Turn.objects.get(pk=ids[at % len(ids)])
            got = position(study, me, turn)
            assert got.__dict__ == expected(study, me, turn)
            assert (progress.total, progress.done, progress.before) == (got.total, got.done, 0)
        else:
            assert (progress.total, progress.done) == (0, 0)
        transaction.set_rollback(True)
