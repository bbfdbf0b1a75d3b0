"""Every submit says it was saved, and what: the labels (the next card names the types, or no
smell, with the card they went on and a link back to it), a revision, a decision, a comment."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Annotation
from tests.factories import HTMX, label, study_url

pytestmark = pytest.mark.django_db


def status_of(body: str) -> str:
    """The text of the page's "saved" status (role=status, class saved), tags removed."""
    found = re.search(r'<(\w+) class="saved[^"]*" role="status">(.*?)</\1>', body, re.S)
    assert found, body[:2000]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found[2])).strip()


def test_the_next_card_says_what_was_saved_on_which_card(client, alice, turns):
    client.force_login(alice)

    response = client.post(
        study_url("card", turns[0]), {"types": ["code_rollback", "signature_mismatch"]}, **HTMX
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert f'data-turn-id="{turns[1].pk}"' in body
    assert status_of(body) == "Saved: Code Rollback, Signature Mismatch on conv-a turn 1."
    assert f'href="{study_url("card", turns[0])}"' in body


def test_it_says_no_smell_when_no_type_was_saved(client, alice, turns):
    client.force_login(alice)

    body = client.post(study_url("card", turns[0]), {"no_smell": "1"}, **HTMX).content.decode()

    assert status_of(body) == "Saved: no smell on conv-a turn 1."


def test_a_card_shown_otherwise_says_nothing_was_saved(client, alice, turns):
    client.force_login(alice)

    body = client.get(study_url("card", turns[1])).content.decode()

    assert 'class="saved' not in body


def test_without_javascript_the_next_page_says_it_too(client, alice, turns):
    client.force_login(alice)

    response = client.post(study_url("card", turns[0]), {"types": ["code_rollback"]}, follow=True)

    body = response.content.decode()
    assert response.redirect_chain[-1][0] == study_url("card", turns[1])
    assert status_of(body) == "Saved: Code Rollback on conv-a turn 1."


def test_after_the_last_card_the_queue_says_it(client, alice, turns):
    client.force_login(alice)
    for turn in turns[:2]:
        label(turn, alice, "code_rollback")

    response = client.post(study_url("card", turns[2]), {"no_smell": "1"}, **HTMX)
    assert response.headers["HX-Redirect"] == reverse("queue", args=["s1"])
    body = client.get(response.headers["HX-Redirect"]).content.decode()

    assert status_of(body) == "Saved: no smell on conv-a turn 3."


@pytest.fixture
def disputed(turns, alice, bob):
    label(turns[1], alice, "ambiguous_instruction")
    label(turns[1], bob, "must_do_omission")
    return turns[1]


def test_a_revision_says_what_was_saved_for_which_round(client, alice, disputed):
    client.force_login(alice)

    response = client.post(
        study_url("discussion", disputed), {"types": ["must_do_omission"], "round": "2"}, **HTMX
    )

    assert response.status_code == 200
    assert Annotation.objects.get(annotator=alice, round=2).codes == {"must_do_omission"}
    assert status_of(response.content.decode()) == "Saved: Must-Do Omission for round 2."


def test_a_comment_says_it_was_sent(client, alice, disputed):
    client.force_login(alice)

    response = client.post(study_url("comment", disputed), {"text": "why?"}, **HTMX)

    assert status_of(response.content.decode()) == "Comment sent (round 2)."


def test_a_decision_says_what_was_decided(client, moderator, disputed):
    client.force_login(moderator)

    response = client.post(
        study_url("decide", disputed),
        {"types": ["must_do_omission"], "rationale": "omission"},
        **HTMX,
    )

    assert response.status_code == 200
    assert status_of(response.content.decode()) == "Decided: Must-Do Omission."


@pytest.mark.parametrize(
    "name, data, user, expected",
    [
        ("comment", {"text": "why?"}, "alice", "Comment sent (round 2)."),
        ("discussion", {"no_smell": "1", "round": "2"}, "alice", "Saved: no smell for round 2."),
        ("decide", {"no_smell": "1", "rationale": "none"}, "moderator", "Decided: no smell."),
    ],
)
def test_without_javascript_the_discussion_says_it_too(
    client, django_user_model, disputed, name, data, user, expected
):
    client.force_login(django_user_model.objects.get(username=user))

    response = client.post(study_url(name, disputed), data, follow=True)

    assert response.status_code == 200
    assert status_of(response.content.decode()) == expected
