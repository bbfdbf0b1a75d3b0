"""The "All done" page leads on to the cards waiting for my labels in a discussion."""

from __future__ import annotations

import pytest

from tests.factories import label

from .conftest import url

pytestmark = pytest.mark.django_db


def test_all_done_links_to_the_cards_to_discuss_with_their_count(client, study, alice, bob, turns):
    for t in turns:
        label(t, alice, "code_rollback")
    label(turns[0], bob)  # disputed: alice has round 2 to do
    label(turns[1], bob)  # disputed too
    label(turns[2], bob, "code_rollback")  # agreed
    client.force_login(alice)
    r = client.get(url("queue", study))
    html = r.content.decode()
    assert "All done" in html
    assert f'<a href="{url("discuss_queue", study)}">To discuss (2 waiting for you)</a>' in html


def test_all_done_says_when_nothing_waits_to_be_discussed(client, study, alice, turns):
    for t in turns:
        label(t, alice)
    client.force_login(alice)
    html = client.get(url("queue", study)).content.decode()
    assert (
        f'<a href="{url("discuss_queue", study)}">To discuss</a> (nothing waiting for you)' in html
    )
