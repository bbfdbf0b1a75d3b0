"""A property of the open sort's tag sets: whatever sequence of adds, removes, "no smell"
ticks and submits two annotators make on two cards (through the card's page, as the panel
posts them), each one's tag set on each card holds exactly their own last successful
submission, every tag in it is their own, and a refused submit (nothing chosen) changes
nothing. The tag names overlap between the two, and differ only by case or spaces, so a
tag taken from the wrong author would show.

Each example runs in a savepoint rolled back at its end (as tests/properties does)."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import FreeTag, TagSet
from annotation.opensort.tagging import normalise
from tests.factories import make_user
from tests.opensort.tag_helpers import cards_of, open_sort_group, post_tags

pytestmark = pytest.mark.django_db

NAMES = ["vague goal", "Vague  Goal", "no tests", "x"]

step = st.tuples(
    st.sampled_from([0, 1]),  # who
    st.sampled_from([0, 1]),  # which card
    # adds and submits twice as often: sets worth comparing
    st.sampled_from(["add", "add", "remove", "no_smell", "submit", "submit"]),
    st.sampled_from(NAMES),
)


class _Rollback(Exception):
    pass


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, max_size=14))
def test_each_tag_set_holds_its_annotators_last_submission_only(study, steps):
    try:
        with transaction.atomic():
            _play(study, steps)
            raise _Rollback
    except _Rollback:
        pass


def _play(study, steps) -> None:
    users = [make_user("alice"), make_user("bob")]
    group = open_sort_group(study, users)
    cards = cards_of(study, group, "c1", 2)
    clients = []
    for user in users:
        client = Client()
        client.force_login(user)
        clients.append(client)
    pending = {(w, c): [] for w in (0, 1) for c in (0, 1)}  # the chips on each one's panel
    no_smell = dict.fromkeys(pending, False)
    stored: dict[tuple[int, int], set[str] | None] = dict.fromkeys(pending)
    for who, card, action, name in steps:
        key = (who, card)
        if action == "add":
            pending[key].append(name)
            no_smell[key] = False
        elif action == "remove":
            pending[key] = [n for n in pending[key] if n != name]
        elif action == "no_smell":
            pending[key], no_smell[key] = [], True
        else:
            r = post_tags(clients[who], cards[card], *pending[key], no_smell=no_smell[key])
            if pending[key] or no_smell[key]:
                assert r.status_code == 200, r.content.decode()[:500]
                stored[key] = {normalise(n).casefold() for n in pending[key]}
            else:
                assert r.status_code == 422
        for (w, c), expected in stored.items():
            tag_set = TagSet.objects.filter(annotator=users[w], turn=cards[c]).first()
            if expected is None:
                assert tag_set is None
                continue
            tags = list(tag_set.tags.all())
            assert {t.name.casefold() for t in tags} == expected
            assert all(t.author_id == users[w].pk for t in tags)
    # one tag per author and name (any case), never shared
    for user in users:
        mine = [
            n.casefold() for n in FreeTag.objects.filter(author=user).values_list("name", flat=True)
        ]
        assert len(mine) == len(set(mine))
