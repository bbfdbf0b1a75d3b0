"""Races on one card, on real PostgreSQL connections: two moderators deciding at once, two
annotators closing round 1 at once, a double-submitted form. Each thread has its own
connection (Django opens one per thread), lined up on a barrier so the calls overlap; each
race runs on 20 cards, because one lucky ordering proves nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from annotation.models import (
    AlreadyDecided,
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Method,
)
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N_CARDS = 20
ROLLBACK, INCOMPLETE = "code_rollback", "incomplete_instruction"


def race(*workers: Callable[[int], object], n: int = N_CARDS) -> list[list[object]]:
    """Run each worker on card 0..n-1, all workers starting card i together; returns, per
    worker, what each call returned or raised."""
    barrier = threading.Barrier(len(workers), timeout=30)
    results: list[list[object]] = [[] for _ in workers]

    def run(k: int) -> None:
        try:
            for i in range(n):
                barrier.wait()
                try:
                    results[k].append(workers[k](i))
                except Exception as e:  # the race's outcome, asserted by the test
                    results[k].append(e)
        finally:
            # this thread's own connection: close it, or the test database cannot be flushed
            connection.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing thread hung (deadlock?)"
    assert all(len(r) == n for r in results), results
    return results


def types(study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    return [by_code[c] for c in codes]


@pytest.fixture
def setup():
    study = make_study()
    alice, bob, charlie = make_user("alice"), make_user("bob"), make_user("charlie")
    group = make_group(study, "g1", [alice, bob], moderator=make_user("mod"))
    turns = list(make_conversation(study, "c1", n_turns=N_CARDS, group=group).turns.all())
    return study, group, turns, alice, bob, charlie


def test_it_lets_one_of_two_moderators_decide_a_card(setup):
    study, group, turns, alice, bob, _ = setup
    lead = make_user("lead")
    for turn in turns:
        label(turn, alice, ROLLBACK)
        label(turn, bob)
        label(turn, alice, ROLLBACK, round=2)
        label(turn, bob, round=2)
    assert set(CardState.objects.values_list("status", flat=True)) == {CardStatus.ESCALATED}

    mod_results, lead_results = race(
        lambda i: CardState.decide(turns[i], group, group.moderator, types(study, ROLLBACK)),
        lambda i: CardState.decide(turns[i], group, lead, types(study, INCOMPLETE), "lead"),
    )

    for turn, by_mod, by_lead in zip(turns, mod_results, lead_results, strict=True):
        outcomes = [by_mod, by_lead]
        won = [r for r in outcomes if isinstance(r, Consensus)]
        lost = [r for r in outcomes if isinstance(r, AlreadyDecided)]
        assert (len(won), len(lost)) == (1, 1), outcomes
        winner = won[0].decided_by.username
        assert f"by {winner}," in str(lost[0]) and "nothing was changed" in str(lost[0])
        # one consensus in all, current, with the winner's labels
        consensus = Consensus.objects.get(turn=turn)
        assert consensus.is_current and consensus.method == Method.MODERATOR
        assert consensus.decided_by.username == winner
        assert consensus.codes == ({ROLLBACK} if winner == "mod" else {INCOMPLETE})
        assert CardState.objects.get(turn=turn).status == CardStatus.AGREED


@pytest.mark.parametrize("third_annotator_first", [False, True])
def test_the_last_two_round_1_labels_always_move_the_card_on(setup, third_annotator_first):
    study, group, turns, alice, bob, charlie = setup
    if third_annotator_first:
        # the card's state row exists already; without charlie, none does and both
        # submits also race to create it
        group.annotators.add(charlie)
        for turn in turns:
            label(turn, charlie, ROLLBACK)
    # even cards: the same set from both (agreed); odd cards: different sets (disputed)
    bobs = [[ROLLBACK] if i % 2 == 0 else [INCOMPLETE] for i in range(N_CARDS)]

    race(
        lambda i: label(turns[i], alice, ROLLBACK),
        lambda i: label(turns[i], bob, *bobs[i]),
    )

    for i, turn in enumerate(turns):
        state = CardState.objects.get(turn=turn)
        labelled = set(
            Annotation.objects.current()
            .filter(turn=turn)
            .values_list("annotator__username", flat=True)
        )
        assert {"alice", "bob"} <= labelled
        if i % 2 == 0:
            assert (state.status, state.round) == (CardStatus.AGREED, 1), i
            consensus = Consensus.objects.get(turn=turn)
            assert (consensus.method, consensus.codes) == (Method.UNANIMOUS, {ROLLBACK})
        else:
            assert (state.status, state.round) == (CardStatus.DISPUTED, 2), i
            assert not Consensus.objects.filter(turn=turn).exists()


def test_a_double_submitted_annotation_is_recorded_once(setup):
    _, _, turns, alice, _, _ = setup

    first, second = race(
        lambda i: label(turns[i], alice, ROLLBACK),
        lambda i: label(turns[i], alice, ROLLBACK),
    )

    for turn, a, b in zip(turns, first, second, strict=True):
        assert isinstance(a, Annotation) and isinstance(b, Annotation), (a, b)
        assert a.pk == b.pk  # the second submit found the first and changed nothing
        rows = Annotation.objects.filter(turn=turn, annotator=alice)
        assert [(r.is_current, r.codes) for r in rows] == [(True, {ROLLBACK})]
        assert CardState.objects.get(turn=turn).status == CardStatus.OPEN


def test_two_different_concurrent_submits_of_one_user_both_land(setup):
    _, _, turns, alice, _, _ = setup

    race(
        lambda i: label(turns[i], alice, ROLLBACK),
        lambda i: label(turns[i], alice, INCOMPLETE),
    )

    for turn in turns:
        rows = list(Annotation.objects.filter(turn=turn, annotator=alice).order_by("pk"))
        # nothing lost: both revisions exist, the later one current, the other history
        assert sorted(sorted(r.codes) for r in rows) == [[ROLLBACK], [INCOMPLETE]]
        assert [r.is_current for r in rows] == [False, True]
        assert Annotation.objects.current().filter(turn=turn, annotator=alice).count() == 1
