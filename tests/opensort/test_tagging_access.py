"""Blind open sort: nobody sees another annotator's free tags, their descriptions or their
note on a card: not the other expert of the group, not a lead or moderator who tags there
too, and before the freeze not even a lead who tags nothing (the conversation browser shows
labels after round 1, never tag sets). Every page, partial, POST reply and API answer of
tests/access/probe.py is asked, plus the lead's browser, the code diff and the autocomplete;
the author alone sees their tags."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Kind, Role
from annotation.rendering import message_html
from tests.access.probe import _api_requests, _page_requests, body_of
from tests.factories import HTMX, make_user, token_client
from tests.opensort.tag_helpers import cards_of, open_sort_group, post_tags

pytestmark = pytest.mark.django_db

SECRETS = ("alice-secret-tag", "alice-secret-description", "alice-secret-note")


def _extra_requests(slug: str, turn) -> list[tuple[str, str, dict, dict]]:
    t = [slug, turn.pk]
    reads = [
        (reverse("card_diff", args=t), {}),
        (reverse("tag_search", args=[slug]), {"q": "alice"}),
        (reverse("tag_search", args=[slug]), {"q": ""}),
        (reverse("my_cards", args=[slug]), {"q": "please"}),
        (reverse("lead_browse", args=[slug]), {}),
        (reverse("lead_conversation", args=[slug, turn.conversation_id]), {}),
        (reverse("lead_groups", args=[slug]), {}),
        (reverse("home"), {}),
    ]
    return [("get", url, data, h) for url, data in reads for h in ({}, HTMX)]


def tag_leaks(user, slug: str, turn) -> list[str]:
    """The requests whose answer shows alice's tags, description or note to `user` (or
    fails with a 500, or answers a read of the card without the card in it)."""
    found = []
    client = Client()
    client.force_login(user)
    shown = message_html(turn.user_text)
    card = reverse("card", args=[slug, turn.pk])
    requests = _page_requests(slug, turn) + _extra_requests(slug, turn)
    # the card's submit answers with the tag panel (refused, then saved)
    requests += [("post", card, {"tag": ["bob's own"]}, HTMX), ("post", card, {}, HTMX)]
    for method, url, data, headers in requests:
        response = getattr(client, method)(url, data, **headers)
        body = body_of(response)
        blank = method == "get" and url == card and response.status_code == 200
        blank = blank and shown not in body
        if response.status_code >= 500 or blank or any(s in body for s in SECRETS):
            found.append(f"{method.upper()} {url} {data or ''} -> {response.status_code}")
    api = token_client(user)
    for method, url, data in _api_requests(slug, turn):
        body = body_of(getattr(api, method)(url, data, format="json"))
        if any(s in body for s in SECRETS):
            found.append(f"API {method.upper()} {url}")
    return found


@pytest.fixture
def world(study, alice):
    """Group "experts" open-sorts: alice, zed and the viewers who tag; alice has tagged the
    first card with her secret tag, description and note."""
    lead_tags = make_user("lead-tags")
    study.add_member(lead_tags, Role.LEAD, Kind.EXPERT)
    mod_tags = make_user("mod-tags")
    zed = make_user("zed")
    group = open_sort_group(study, [alice, zed, lead_tags, mod_tags])
    group.moderator = mod_tags
    group.save()
    cards = cards_of(study, group, "c1", 2)
    client = Client()
    client.force_login(alice)
    r = post_tags(
        client, cards[0], ("alice-secret-tag", "alice-secret-description"), note="alice-secret-note"
    )
    assert r.status_code == 200
    return {"turn": cards[0], "zed": zed, "lead-tags": lead_tags, "mod-tags": mod_tags}


@pytest.mark.parametrize("who", ["zed", "lead-tags", "mod-tags"])
def test_nobody_who_tags_the_card_sees_anothers_tags(world, who):
    viewer = world[who]
    turn = world["turn"]
    assert tag_leaks(viewer, "s1", turn) == []
    # nor after tagging it themselves: there are no rounds to reveal them in the open sort
    client = Client()
    client.force_login(viewer)
    post_tags(client, turn, "my own tag")
    assert tag_leaks(viewer, "s1", turn) == []


@pytest.mark.parametrize("kind", ["lead", "moderator", "superuser"])
def test_nobody_who_tags_nothing_sees_the_tags_before_the_freeze(world, study, kind):
    viewer = make_user(kind)
    if kind == "superuser":
        viewer.is_superuser = True
        viewer.save()
    else:
        study.add_member(viewer, Role.LEAD if kind == "lead" else Role.MODERATOR, Kind.EXPERT)
        if kind == "moderator":
            study.groups.update(moderator=viewer)
    assert tag_leaks(viewer, "s1", world["turn"]) == []


def test_the_author_sees_her_own_tags(world, alice):
    client = Client()
    client.force_login(alice)
    card = client.get(reverse("card", args=["s1", world["turn"].pk])).content.decode()
    assert all(s in card for s in ("alice-secret-tag", "alice-secret-note"))
    found = client.get(reverse("tag_search", args=["s1"]), {"q": "secret"}).content.decode()
    assert "alice-secret-tag" in found and "alice-secret-description" in found


def test_a_submit_never_takes_another_annotators_tag(world, alice):
    """zed posts alice's tag name: he gets a tag of his own of that name, never hers."""
    zed, turn = world["zed"], world["turn"]
    client = Client()
    client.force_login(zed)
    post_tags(client, turn, "alice-secret-tag")
    tag = zed.tagset_set.get().tags.get()
    assert tag.author == zed and tag.description == ""
    assert alice.tagset_set.get().tags.get().author == alice
