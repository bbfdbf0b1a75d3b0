"""The annotator's kept queue (annotation/models/queue.py: each card's place, done and put
off, and the counts) says what the rows say after any sequence of writes: Hypothesis plays
random sequences of label submits, revisions, skips, imported labels, assignments, seat
moves, turns written to an assigned conversation, decisions and a taxonomy move, and after
each sequence compares every annotator's kept rows and counts with a recount through the ORM
(TurnQuerySet.for_annotator, annotated_by, put_off_by, with_status_for and
CardStateQuerySet.with_labelled_by: what the queue, My cards and the discussion queue read
before the rows were kept)."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.accounts.seats import move_annotator
from annotation.evolution import EvolutionError, evolve
from annotation.importers.label_batch import LabelItem, write_batch
from annotation.models import (
    AlreadyDecided,
    Annotation,
    CardSkip,
    CardState,
    Conversation,
    NotDecidable,
    QueueCard,
    QueueProgress,
    RoundClosed,
    SeatRefused,
    Turn,
)
from annotation.models.queue import next_card
from tests.factories import make_conversation, make_group, make_study, make_user, types_of

pytestmark = pytest.mark.django_db

MERGE = {
    "merge": [
        {
            "into": "Constraint violation",
            "from": ["must_do_omission", "must_not_violation"],
            "definition": "The reply breaks a constraint stated earlier.",
        }
    ]
}
WHO = ["alice", "bob", "carol"]
CODES = st.sampled_from([(), ("code_rollback",)])
n = st.integers(min_value=0, max_value=40)
op = st.one_of(
    st.tuples(st.just("assign"), n, st.sampled_from(["g1", "g2"])),
    st.tuples(st.just("label"), n, st.sampled_from(WHO), CODES),
    st.tuples(st.just("revise"), n, st.sampled_from(WHO), CODES),
    st.tuples(st.just("skip"), n, st.sampled_from(WHO), st.sampled_from(["skip", "flag"])),
    st.tuples(st.just("import"), st.lists(n, max_size=4), st.sampled_from(WHO), CODES),
    st.tuples(st.just("move"), st.sampled_from(WHO), st.sampled_from(["g1", "g2"])),
    st.tuples(
        st.just("turns"), st.integers(min_value=0, max_value=3), st.sampled_from(["g1", "g2"])
    ),
    st.tuples(st.just("decide"), n),
    st.tuples(st.just("evolve")),
)


def recount(study, user) -> tuple[list, tuple[int, int]]:
    cards = (
        Turn.objects.for_annotator(study, user)
        .annotated_by(user)
        .put_off_by(user)
        .with_status_for(user)
        .values_list("pk", "done", "put_off_at", "status")
    )
    # whether the round under way has the user's label (CardStateQuerySet.with_labelled_by)
    states = {
        s.turn_id: s.labelled
        for s in CardState.objects.filter(group__annotators=user).with_labelled_by(user)
    }
    rows = [
        (i, pk, bool(done), at, status, states.get(pk, bool(done)))
        for i, (pk, done, at, status) in enumerate(cards, start=1)
    ]
    return rows, (len(rows), sum(1 for r in rows if r[2]))


def kept(study, user) -> tuple[list, tuple[int, int]]:
    rows = QueueCard.objects.filter(annotator=user, study=study).order_by("ordinal")
    columns = ("ordinal", "turn_id", "done", "put_off_at", "status", "answered")
    rows = [tuple(r) for r in rows.values_list(*columns)]
    counts = QueueProgress.objects.filter(annotator=user, study=study).values_list("cards", "done")
    return rows, counts.first() or (0, 0)


def group_of(turn: Turn, user):
    return turn.conversation.groups.filter(annotators=user).first()


def play(study, users, groups, lead, step) -> None:
    kind, *args = step
    turns = list(Turn.objects.filter(conversation__study=study).order_by("pk"))
    turn = turns[args[0] % len(turns)] if turns and args and isinstance(args[0], int) else None
    if kind == "assign":
        conversations = list(Conversation.objects.filter(study=study).order_by("pk"))
        c = conversations[args[0] % len(conversations)]
        try:
            Conversation.objects.filter(pk=c.pk).assign(groups[args[1]])
        except SeatRefused:
            pass
    elif kind in ("label", "revise") and turn is not None:
        user = users[args[1]]
        group = group_of(turn, user)
        if group is None:
            return
        note = "again" if kind == "revise" else ""
        for _ in range(2 if kind == "revise" else 1):
            try:
                Annotation.submit(
                    turn=turn,
                    group=group,
                    annotator=user,
                    types=types_of(study, *args[2]),
                    note=note,
                )
            except RoundClosed:
                return
    elif kind == "skip" and turn is not None:
        CardSkip.put_off(turn, users[args[1]], args[2], reason="later")
    elif kind == "import":
        user, items = users[args[1]], []
        for number, i in enumerate(args[0], start=1):
            t = turns[i % len(turns)] if turns else None
            group = group_of(t, user) if t else None
            if group is None:
                continue
            types = types_of(study, *args[2])
            items.append(
                LabelItem(
                    number=number,
                    turn_id=t.pk,
                    group_id=group.pk,
                    annotator_id=user.pk,
                    round=1,
                    type_ids=tuple(x.pk for x in types),
                    codes=frozenset(args[2]),
                )
            )
        write_batch(study, items)
    elif kind == "move":
        user, target = users[args[0]], groups[args[1]]
        source = next(
            (g for g in groups.values() if g.annotators.filter(pk=user.pk).exists()), None
        )
        try:
            if source is None:
                target.annotators.add(user)
            else:
                move_annotator(user, source, target)
        except SeatRefused:
            pass
    elif kind == "turns":
        k = Conversation.objects.filter(study=study).count()
        try:
            make_conversation(study, f"new{k}", n_turns=args[0], group=groups[args[1]])
        except SeatRefused:
            pass
    elif kind == "decide" and turn is not None:
        for state in CardState.objects.filter(turn=turn):
            try:
                CardState.decide(turn, state.group, lead, types_of(study, "code_rollback"))
            except (NotDecidable, AlreadyDecided):
                pass
    elif kind == "evolve":
        try:
            evolve(study, MERGE, lead)
        except EvolutionError:
            pass


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(op, min_size=1, max_size=14))
def test_the_kept_queue_says_what_a_recount_says(db, steps):
    with transaction.atomic():
        users = {name: make_user(name) for name in WHO}
        lead = make_user("lead")
        study = make_study("s1")
        groups = {
            "g1": make_group(study, "g1", [users["alice"], users["bob"]]),
            "g2": make_group(study, "g2", [users["carol"]]),
        }
        for i in range(4):
            make_conversation(
                study, f"c{i}", n_turns=i % 3 + 1, group=groups["g1"] if i < 2 else None
            )
        for step in steps:
            play(study, users, groups, lead, step)
        for name, user in users.items():
            assert kept(study, user) == recount(study, user), (name, steps)
            # the next card's seek says what the ORM's rule says, from the start and after
            # each card (TurnQuerySet.next_for)
            cards = Turn.objects.for_annotator(study, user)
            assert next_card(study, user) == cards.next_for(user), (name, steps)
            for turn in cards:
                assert next_card(study, user, turn) == cards.next_for(user, turn), (name, steps)
        transaction.set_rollback(True)
