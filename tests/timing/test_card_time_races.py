"""Two tabs of one annotator reporting time on one card at the same moment, on real
PostgreSQL connections (one per thread, lined up on a barrier): both increments land, the
first report creates the row once, and a forged burst cannot add more than its slack."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation import timing
from annotation.models import CardTime
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N_CARDS = 20


def race(n_threads: int, call) -> list[list[object]]:
    """Run `call(card_index)` in `n_threads` threads, all starting card i together."""
    barrier = threading.Barrier(n_threads, timeout=30)
    results: list[list[object]] = [[] for _ in range(n_threads)]

    def run(k: int) -> None:
        try:
            for i in range(N_CARDS):
                barrier.wait()
                try:
                    results[k].append(call(i))
                except Exception as e:  # the race's outcome, asserted by the test
                    results[k].append(e)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing thread hung (deadlock?)"
    return results


@pytest.fixture
def cards():
    study = make_study()
    alice = make_user("alice")
    group = make_group(study, "g1", [alice])
    turns = list(make_conversation(study, "c1", n_turns=N_CARDS, group=group).turns.all())
    return alice, turns


def test_two_first_reports_at_once_create_one_row_holding_both(cards):
    alice, turns = cards
    results = race(2, lambda i: timing.add_time(turns[i], alice, 1_000 + i))
    assert all(isinstance(r, int) for rs in results for r in rs), results
    rows = dict(CardTime.objects.values_list("turn_id", "active_ms"))
    assert rows == {t.pk: 2 * (1_000 + i) for i, t in enumerate(turns)}


def test_two_reports_at_once_on_an_existing_row_both_add(cards):
    alice, turns = cards
    past = timezone.now() - timedelta(minutes=10)
    for turn in turns:
        CardTime.objects.create(turn=turn, annotator=alice, active_ms=5_000)
    CardTime.objects.update(updated_at=past)
    results = race(2, lambda i: timing.add_time(turns[i], alice, 1_500))
    assert all(isinstance(r, int) for rs in results for r in rs), results
    assert set(CardTime.objects.values_list("active_ms", flat=True)) == {8_000}


def test_a_burst_of_big_reports_adds_one_of_them(cards):
    # eight forged reports of a minute each, at once, ten minutes after the last one: the
    # check and the addition are one UPDATE, so only the first fits the wall time
    alice, turns = cards
    past = timezone.now() - timedelta(seconds=90)
    for turn in turns:
        CardTime.objects.create(turn=turn, annotator=alice, active_ms=0)
    CardTime.objects.update(updated_at=past)
    results = race(8, lambda i: timing.add_time(turns[i], alice, 60_000))
    refused = [r for rs in results for r in rs if isinstance(r, timing.TimeRefused)]
    assert len(refused) == 7 * N_CARDS
    assert set(CardTime.objects.values_list("active_ms", flat=True)) == {60_000}
