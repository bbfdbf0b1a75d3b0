"""My cards: filtered by the card's state in my group (open, agreed, disputed, escalated),
by to do / labelled, and by text; the filters stay on every page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Conversation, Turn
from tests.factories import label, make_conversation, make_group

from .conftest import url

pytestmark = pytest.mark.django_db


@pytest.fixture
def states(study, alice, bob, turns):
    """turn 1 agreed, 2 disputed, 3 escalated (no discussion round left), 4 open; alice
    labelled 1-3."""
    study.discussion_rounds = 0
    study.save()
    label(turns[0], alice)
    label(turns[0], bob)
    study.discussion_rounds = 1
    study.save()
    label(turns[1], alice, "code_rollback")
    label(turns[1], bob)
    study.discussion_rounds = 0
    study.save()
    label(turns[2], alice, "code_rollback")
    label(turns[2], bob)
    study.discussion_rounds = 1
    study.save()
    return turns


def shown(client, study, **params) -> list[int]:
    r = client.get(url("my_cards", study), params)
    assert r.status_code == 200, r.content
    return [t.index for t in r.context["page"]]


@pytest.mark.parametrize(
    "state, indexes",
    [
        ("", [1, 2, 3, 4]),
        ("agreed", [1]),
        ("disputed", [2]),
        ("escalated", [3]),
        ("open", [4]),
        ("todo", [4]),
        ("labelled", [1, 2, 3]),
    ],
)
def test_it_filters_by_state_in_my_group(client, study, alice, states, state, indexes):
    client.force_login(alice)
    assert shown(client, study, state=state) == indexes


def test_the_state_is_the_one_in_my_group(client, study, alice, bob, charlie, states):
    # the same conversation shared with charlie's group, where the cards are all open
    other = make_group(study, "other", [charlie])
    Conversation.objects.filter(pk=states[0].conversation_id).assign(other)
    client.force_login(charlie)
    assert shown(client, study, state="open") == [1, 2, 3, 4]
    assert shown(client, study, state="agreed") == []


@pytest.mark.parametrize(
    "q, indexes",
    [
        ("FUNCTION NUMBER 2", [2]),  # the user's text, any case
        ("x * 3", [3]),  # the reply
        ("conv-A", [1, 2, 3, 4]),  # the conversation id
        ("nowhere", []),
    ],
)
def test_it_searches_the_text(client, study, alice, turns, q, indexes):
    client.force_login(alice)
    assert shown(client, study, q=q) == indexes


def test_it_searches_only_my_cards(client, study, alice, turns, other_group):
    client.force_login(alice)
    assert shown(client, study, q="conv-c") == []


def test_state_and_text_combine(client, study, alice, states):
    client.force_login(alice)
    assert shown(client, study, state="labelled", q="number 2") == [2]


def test_the_filters_stay_on_every_page(client, study, alice, group):
    for i in range(3):
        make_conversation(study, f"big-{i}", n_turns=30, group=group)
    client.force_login(alice)
    r = client.get(url("my_cards", study), {"state": "todo", "q": "big"})
    html = r.content.decode()
    assert r.context["page"].paginator.count == 90
    assert 'href="?state=todo&amp;q=big&amp;page=2"' in html
    r = client.get(url("my_cards", study), {"state": "todo", "q": "big", "page": 2})
    assert 'href="?state=todo&amp;q=big&amp;page=1"' in r.content.decode()
    assert 'href="?state=todo&amp;q=big&amp;page=3"' not in r.content.decode()


def test_the_filter_form_has_labels_and_keeps_its_values(client, study, alice, turns):
    client.force_login(alice)
    html = client.get(url("my_cards", study), {"state": "todo", "q": "a<b"}).content.decode()
    assert '<form method="get"' in html
    assert 'for="id_state"' in html and 'for="id_q"' in html
    assert 'value="a&lt;b"' in html
    assert '<option value="todo" selected>' in html


def test_an_unknown_state_is_a_clear_error(client, study, alice, turns):
    client.force_login(alice)
    r = client.get(url("my_cards", study), {"state": "nonsense"})
    assert r.status_code == 400
    assert "State: Select a valid choice. nonsense is not one of the available choices." in (
        r.content.decode()
    )


def test_the_page_shows_each_cards_state(client, study, alice, states):
    client.force_login(alice)
    html = client.get(url("my_cards", study)).content.decode()
    for status in ("agreed", "disputed", "escalated", "open"):
        assert f'<span class="state-{status}">{status}</span>' in html


def test_my_cards_cost_the_same_queries_however_many_cards(client, study, alice, group, turns):
    label(turns[0], alice)
    client.force_login(alice)
    with CaptureQueriesContext(connection) as small:
        client.get(url("my_cards", study), {"state": "labelled", "q": "conv"})
    for i in range(5):
        make_conversation(study, f"conv-{i}", n_turns=5, group=group)
    for t in Turn.objects.filter(conversation__external_id="conv-1"):
        label(t, alice)
    with CaptureQueriesContext(connection) as big:
        r = client.get(url("my_cards", study), {"state": "labelled", "q": "conv"})
    assert len(r.context["page"]) == 6
    assert len(big) == len(small)


def test_the_list_previews_the_user_text_without_its_markdown(client, study, alice, turns):
    Turn.objects.filter(pk=turns[0].pk).update(
        user_text="## Bug\n\nWhy does **`mean([])`** fail? See [the log](https://example.org/l)"
    )
    client.force_login(alice)
    r = client.get(url("my_cards", study))
    row = r.content.decode().split(f'data-turn-id="{turns[0].pk}"')[1].split("</tr>")[0]
    assert "Bug Why does mean([]) fail? See the log" in row
    for marker in ("##", "**", "`", "](", "https://example.org"):
        assert marker not in row, marker
