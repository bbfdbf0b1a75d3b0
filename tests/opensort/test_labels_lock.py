"""Seeing the board locks one's round-1 labels on the open sort's cards, as it locks one's tag
sets (issue 24, point 3). After the freeze a card stays in round 1 until every annotator of
its group has labelled it; whoever opened the board (and so saw everyone's tags on it) could
otherwise revise the label their tags became, and it would no longer be their own judgment.
The page, its htmx partial and the API refuse alike and keep what is stored."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from annotation.models import Annotation, BoardType, BoardVisit, CardState, CardStatus, FreeTag
from annotation.opensort import board as ops
from annotation.opensort.freeze import freeze
from tests.factories import HTMX, make_conversation, make_group, study_url, token_client
from tests.opensort.tag_helpers import cards_of, open_sort_group

from .board_factories import tag_card

pytestmark = pytest.mark.django_db

LOCKED = "Your round-1 labels on the open sort's cards are locked"


@pytest.fixture
def world(study, lead, alice, bob, charlie):
    """alice, bob and charlie open-sort two cards; alice and bob tagged both, charlie none.
    alice opened the board; the lead froze it: both cards are still in round 1 (charlie has
    not labelled them), alice's and bob's tags are their labels."""
    group = open_sort_group(study, [alice, bob, charlie])
    cards = cards_of(study, group, n=2)
    for user, name in ((alice, "vague ask"), (bob, "unclear request")):
        tag_card(cards[0], group, user, name)
        tag_card(cards[1], group, user)
    ops.create_type(study, lead, "Smell")
    smell = BoardType.objects.get(study=study)
    for tag in FreeTag.objects.filter(study=study):
        ops.set_tag_type(study, lead, tag.pk, smell.pk)
    return {"group": group, "cards": cards}


def open_board(client, user, study):
    client.force_login(user)
    r = client.get(reverse("board", args=[study.slug]) + "?confirm=1")
    assert r.status_code == 200
    assert BoardVisit.objects.filter(study=study, user=user).exists()


def do_freeze(study, lead):
    freeze(study, lead)
    study.refresh_from_db()


def revisions(user, turn) -> list[tuple[bool, frozenset]]:
    rows = Annotation.objects.filter(annotator=user, turn=turn, round=1).order_by("pk")
    return [(a.is_current, a.codes) for a in rows.prefetch_related("types")]


def test_after_seeing_the_board_her_round_1_labels_are_locked_everywhere(
    client, study, lead, alice, world
):
    open_board(client, alice, study)
    do_freeze(study, lead)
    card = world["cards"][0]
    assert CardState.objects.get(turn=card).status == CardStatus.OPEN
    stored = revisions(alice, card)
    assert stored == [(True, {"smell"})]

    for htmx in (True, False):  # the htmx partial and the plain page
        headers = HTMX if htmx else {}
        r = client.post(study_url("card", card), {"no_smell": "1"}, **headers)
        assert r.status_code == 409, htmx
        html = unescape(r.content.decode())
        assert f"Not saved: {LOCKED}" in html and "opened the consolidation board" in html
        assert "Submit <kbd>Enter</kbd>" not in html
    r = token_client(alice).put(
        f"/api/studies/s1/cards/{card.pk}/annotation/", {"labels": []}, format="json"
    )
    assert r.status_code == 409
    assert r.json()["detail"].startswith(LOCKED) and "Nothing was saved" in r.json()["detail"]
    # a card she has no label on yet is locked alike (the board showed bob's tags on it)
    Annotation.objects.filter(annotator=alice, turn=world["cards"][1]).delete()
    r = client.post(study_url("card", world["cards"][1]), {"no_smell": "1"}, **HTMX)
    assert r.status_code == 409
    assert not Annotation.objects.filter(annotator=alice, turn=world["cards"][1]).exists()

    assert revisions(alice, card) == stored
    # the card says so, offers no submit, and still shows her stored label
    html = unescape(client.get(study_url("card", card)).content.decode())
    assert LOCKED in html and "Submit <kbd>Enter</kbd>" not in html


def test_who_has_not_seen_the_board_still_revises(client, study, lead, bob, world):
    do_freeze(study, lead)
    card = world["cards"][0]
    r = token_client(bob).put(
        f"/api/studies/s1/cards/{card.pk}/annotation/", {"labels": []}, format="json"
    )
    assert r.status_code == 200
    assert revisions(bob, card)[-1] == (True, frozenset())
    client.force_login(bob)
    r = client.post(study_url("card", card), {"types": ["smell"]}, **HTMX)
    assert r.status_code == 200
    assert revisions(bob, card)[-1] == (True, {"smell"})


def test_cards_outside_the_open_sort_are_not_locked(client, study, lead, alice, world):
    open_board(client, alice, study)
    do_freeze(study, lead)
    other = make_group(study, "later", [alice, lead])
    turn = make_conversation(study, "c2", n_turns=1, group=other).turns.get()
    client.force_login(alice)
    r = client.post(study_url("card", turn), {"types": ["smell"]}, **HTMX)
    assert r.status_code == 200
    assert revisions(alice, turn) == [(True, {"smell"})]


def test_who_opens_the_board_after_the_freeze_is_asked_before_it_locks_his_labels(
    client, study, lead, bob, world
):
    do_freeze(study, lead)
    card = world["cards"][0]
    client.force_login(bob)
    r = client.get(reverse("board", args=[study.slug]))
    assert r.status_code == 200
    html = r.content.decode()
    assert "your round-1 labels there are locked" in html and "unclear request" not in html
    assert not BoardVisit.objects.filter(user=bob).exists()
    # he may still change his label until he opens the board
    r = client.post(study_url("card", card), {"no_smell": "1"}, **HTMX)
    assert r.status_code == 200
    open_board(client, bob, study)
    r = client.post(study_url("card", card), {"types": ["smell"]}, **HTMX)
    assert r.status_code == 409
    assert revisions(bob, card)[-1] == (True, frozenset())
