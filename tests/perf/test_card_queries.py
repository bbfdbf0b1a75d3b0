"""What the annotator's four requests of the load test (benchmarks/load_test.py) cost in
queries: the card (page and htmx partial, `p`/`n`), the earlier turns' partial (`c`) and the
label submit (answered with the next card). Pinned, and the same however many earlier turns
the conversation has and however many labels the annotator and the others gave before: a
card late in a long conversation of a study under way costs what the first card costs.

The session and the user are 2 of them. Transaction control (BEGIN, SAVEPOINT, RELEASE) is
not counted: SQLite shows a BEGIN that PostgreSQL does not."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db

# the card: 14 with the member's last seen taxonomy version (annotation/hotkeys.key_changes)
# and the open sort's board lock on round-1 labels (opensort/access.labels_locked), the
# submit 31 (the lock checked on the submit and on the next card; the card marked done in the
# annotator's kept queue and progress, models/queue.mark_done: 2, and its state synced to the
# queues of its group, queue.sync_states: 1)
CARD, CONTEXT, LABEL = 14, 7, 31
CONTROL = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")
HTMX = {"HTTP_HX_REQUEST": "true"}


def queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = fn()
    assert response.status_code == 200, response.status_code
    return sum(1 for q in ctx.captured_queries if not q["sql"].lstrip().startswith(CONTROL))


def costs(client, study, turn) -> dict[str, int]:
    """Each request kind's queries on `turn` (the label submit last: it labels the card)."""
    url = reverse("card", args=[study.slug, turn.pk])
    return {
        "card page": queries(lambda: client.get(url)),
        "card htmx": queries(lambda: client.get(url, **HTMX)),
        "context": queries(lambda: client.get(url + "context/", **HTMX)),
        "label": queries(lambda: client.post(url, {"types": ["code_rollback"]}, **HTMX)),
    }


@pytest.fixture
def group(study, alice, bob):
    return make_group(study, "g1", [alice, bob])


def test_the_card_requests_cost_a_pinned_number_of_queries(client, study, alice, group):
    conversation = make_conversation(study, "short", n_turns=3, group=group)
    client.force_login(alice)
    turn = conversation.turns.get(index=2)
    assert costs(client, study, turn) == {
        "card page": CARD,
        "card htmx": CARD,
        "context": CONTEXT,
        "label": LABEL,
    }


def test_they_cost_the_same_late_in_a_long_conversation_of_a_study_under_way(
    client, study, alice, bob, group
):
    client.force_login(alice)
    short = make_conversation(study, "short", n_turns=3, group=group)
    first = costs(client, study, short.turns.get(index=2))
    # 40 earlier turns, each labelled by both (and revised by alice: history rows), other
    # conversations done before it, a card skipped
    for i in range(3):
        done = make_conversation(study, f"done-{i}", n_turns=4, group=group)
        for t in done.turns.all():
            label(t, alice, "code_rollback")
    long = make_conversation(study, "long", n_turns=45, group=group)
    turns = list(long.turns.order_by("index"))
    for t in turns[:40]:
        label(t, alice, "code_rollback", note="first")
        label(t, alice, "code_rollback", note="revised")
        label(t, bob, "must_do_omission")
    client.post(reverse("card_skip", args=[study.slug, turns[41].pk]), **HTMX)
    late = costs(client, study, turns[40])
    assert late == first
