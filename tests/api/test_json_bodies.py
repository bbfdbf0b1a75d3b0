"""The API's JSON bodies (issue 24, point 8): a body nested deeper than the limit is a 400
naming the body, before anything parses it (Python's json recursed into a RecursionError, a
500); nothing is saved. Brackets inside strings are text, not nesting."""

from __future__ import annotations

import json

import pytest

from annotation.jsondepth import MAX_DEPTH
from annotation.models import Annotation, Consensus, Job, Proposal
from tests.factories import AMBIGUOUS, ROLLBACK, label, token_client

pytestmark = pytest.mark.django_db

TOO_DEEP = f"The JSON body is nested deeper than {MAX_DEPTH} levels"


def nested(depth: int) -> str:
    """{"labels": [[...[]...]]}: `depth` arrays and objects inside each other in all."""
    return '{"labels": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.fixture
def writes(cards_setup, alice, bob, lead):
    """Each JSON write of the API, by someone it is open to: (client, method, url, rows)."""
    _, c1, _ = cards_setup
    first, second = c1.turns.order_by("index")[:2]
    label(first, alice, AMBIGUOUS)
    label(first, bob, ROLLBACK)  # disputed: the lead may decide it
    s = "/api/studies/s1"
    return {
        "annotation": (token_client(alice), "put", f"{s}/cards/{second.pk}/annotation/"),
        "proposal": (token_client(alice), "post", f"{s}/cards/{second.pk}/proposals/"),
        "consensus": (token_client(lead), "post", f"{s}/cards/{first.pk}/consensus/"),
        "export": (token_client(lead), "post", f"{s}/exports/"),
    }


def rows() -> list[int]:
    return [m.objects.count() for m in (Annotation, Proposal, Consensus, Job)]


@pytest.mark.parametrize("endpoint", ["annotation", "proposal", "consensus", "export"])
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_body_nested_too_deep_is_a_400_naming_the_body(writes, endpoint, depth):
    client, method, url = writes[endpoint]
    before = rows()

    response = getattr(client, method)(url, nested(depth), content_type="application/json")

    assert response.status_code == 400
    assert TOO_DEEP in response.json()["detail"]
    assert rows() == before


def test_a_body_at_the_limit_is_read_and_checked_as_usual(writes):
    client, method, url = writes["annotation"]

    response = client.put(url, nested(MAX_DEPTH), content_type="application/json")

    # read: the labels field is named, not the body
    assert response.status_code == 400
    assert "labels" in response.json()


def test_brackets_inside_strings_do_not_nest(writes):
    client, _, url = writes["annotation"]
    note = '[{"\\"' * 2_000  # brackets, quotes and backslashes in a string
    before = Annotation.objects.count()

    body = json.dumps({"labels": [], "note": note})

    response = client.put(url, body, content_type="application/json")

    assert response.status_code == 200, response.content[:300]
    assert Annotation.objects.count() == before + 1
    assert Annotation.objects.latest("pk").note == note


def test_a_body_larger_than_the_request_limit_is_refused_unread(writes, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    client, _, url = writes["annotation"]

    before = rows()

    response = client.put(url, {"labels": [], "note": "x" * 2_000}, format="json")

    assert response.status_code == 400
    assert "The request body is larger than 1,000 bytes" in response.json()["detail"]
    assert rows() == before
