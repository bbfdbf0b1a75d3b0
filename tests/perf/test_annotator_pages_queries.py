"""Issue 25 point 1: the annotator's pages issue the same number of queries whatever the
size of their queue. A group of two annotators holds N or 10N conversations (20 and 200, 3
turns each); alice has labelled the first third of her cards (both have on a fifth of those,
disputed), skipped one; each page is asked at both sizes and its query count pinned: the next
card (`queue/`), the card (page and htmx partial), Back and Next (the neighbours' cards), the
study home, My cards (first page, a far page, to do, labelled) and the discussion queue.

Transaction control (BEGIN, SAVEPOINT, RELEASE) is not counted: SQLite shows a BEGIN that
PostgreSQL does not. On PostgreSQL (marker postgres) the hot queries' plans are checked to
seek the kept queue's indexes (annotation/models/queue.py) rather than scan."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import (
    Annotation,
    CardSkip,
    CardState,
    CardStatus,
    Conversation,
    QueueCard,
    Turn,
)
from annotation.models.queue import next_card, place
from tests.factories import make_group, types_of

pytestmark = pytest.mark.django_db

CONTROL = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")
HTMX = {"HTTP_HX_REQUEST": "true"}
# each page's queries (session and user included), the same at 20 and 200 conversations
PINNED = {
    "next card": 6,  # one seek for the next card (models/queue.next_card), then a redirect
    "card": 14,  # the card's place, neighbours and progress: one query (queue.place)
    "card htmx": 14,
    "back": 14,
    "next": 14,
    "study home": 13,  # the progress: one row (queue.progress)
    "my cards": 7,  # the count kept, a page of places, its turns (views/shared/nav.KeptCards)
    "my cards far": 7,
    "my cards to do": 7,
    "my cards labelled": 7,
    "discuss": 8,  # two counts on the kept queue by state, each page's rows and states
}


def queries(client, url: str, **extra) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, **extra)
    assert response.status_code in (200, 302), (url, response.status_code)
    return sum(1 for q in ctx.captured_queries if not q["sql"].lstrip().startswith(CONTROL))


def build(study, group, alice, bob, n: int) -> list[int]:
    """`n` conversations of 3 turns assigned to `group`; alice's first third labelled (bob
    too on every fifth of them, with another label: disputed), her next card skipped."""
    convs = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"c{i}", source_format="native", n_turns=3)
        for i in range(n)
    )
    Turn.objects.bulk_create(
        Turn(conversation=c, index=i, user_text=f"q{i}", reply_text=f"a{i}")
        for c in convs
        for i in (1, 2, 3)
    )
    Conversation.objects.filter(study=study).assign(group)
    turns = list(
        Turn.objects.filter(conversation__study=study).order_by("conversation_id", "index")
    )
    rollback = types_of(study, "code_rollback")
    for i, turn in enumerate(turns[: len(turns) // 3]):
        Annotation.submit(turn=turn, group=group, annotator=alice, types=[])
        if i % 5 == 0:
            Annotation.submit(turn=turn, group=group, annotator=bob, types=rollback)
    CardSkip.put_off(turns[len(turns) // 3], alice, "skip")
    assert (
        CardState.objects.filter(status=CardStatus.DISPUTED).count() == (len(turns) // 3 + 4) // 5
    )
    return [t.pk for t in turns]


def costs(client, study, turns: list[int]) -> dict[str, int]:
    slug = study.slug
    mid = turns[len(turns) // 2]
    card = reverse("card", args=[slug, mid])
    cards = reverse("my_cards", args=[slug])
    return {
        "next card": queries(client, reverse("queue", args=[slug])),
        "card": queries(client, card),
        "card htmx": queries(client, card, **HTMX),
        "back": queries(client, reverse("card", args=[slug, turns[turns.index(mid) - 1]]), **HTMX),
        "next": queries(client, reverse("card", args=[slug, turns[turns.index(mid) + 1]]), **HTMX),
        "study home": queries(client, reverse("study", args=[slug])),
        "my cards": queries(client, cards),
        "my cards far": queries(client, cards + "?page=2"),
        "my cards to do": queries(client, cards + "?state=todo"),
        "my cards labelled": queries(client, cards + "?state=labelled"),
        "discuss": queries(client, reverse("discuss_queue", args=[slug])),
    }


@pytest.fixture
def group(study, alice, bob):
    return make_group(study, "g1", [alice, bob])


@pytest.mark.parametrize("n", [20, 200])
def test_the_annotator_pages_cost_the_same_queries_at_n_and_10n(
    client, study, alice, bob, group, n
):
    turns = build(study, group, alice, bob, n)
    client.force_login(alice)
    assert costs(client, study, turns) == PINNED


@pytest.mark.postgres
def test_the_hot_queries_seek_the_kept_queue_on_postgresql(study, alice, bob, group):
    turns = build(study, group, alice, bob, 200)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    turn = Turn.objects.get(pk=turns[len(turns) // 2])
    with CaptureQueriesContext(connection) as ctx:
        next_card(study, alice, turn)
        place(study, alice, turn)
    table = QueueCard._meta.db_table
    for q in ctx.captured_queries:
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")  # a tiny table: judge the plan's shape
            cursor.execute("EXPLAIN " + q["sql"])
            plan = "\n".join(r[0] for r in cursor.fetchall())
            cursor.execute("SET enable_seqscan = on")
        assert f"Seq Scan on {table}" not in plan, plan
        assert "Index" in plan, plan
