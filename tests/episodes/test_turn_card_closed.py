"""An episode group judges episodes, never turns (issue 21 point 1: a study chooses its unit
per group): its annotators cannot open a turn card of their sessions by its URL, label it,
skip it, time it or propose on it; the page says where their work is. A turn group sharing
the session keeps its cards."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Annotation, CardSkip, CardTime

from . import session_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(agents, tmp_path, alice, bob):
    return session_world.build(agents, tmp_path, alice, bob)


def _turn(world, conversation="s1", index=1):
    return world[conversation].turns.get(index=index)


def test_an_episode_annotator_cannot_open_a_turn_card_by_its_url(client, world, alice):
    client.force_login(alice)
    turn = _turn(world)
    response = client.get(reverse("card", args=["ag", turn.pk]))
    assert response.status_code == 403
    assert "by episodes" in response.content.decode()


def test_nor_label_skip_flag_or_time_it(client, world, alice):
    client.force_login(alice)
    turn = _turn(world)
    posts = {
        "card": {"types": ["scope_overreach"], "round": "1"},
        "card_skip": {},
        "card_flag": {"reason": "odd"},
        "card_time": {"ms": "5000"},
    }
    for name, data in posts.items():
        response = client.post(reverse(name, args=["ag", turn.pk]), data)
        assert response.status_code == 403, name
    assert not Annotation.objects.exists()
    assert not CardSkip.objects.exists() and not CardTime.objects.exists()


def test_a_turn_group_sharing_the_session_keeps_its_cards(client, world):
    client.force_login(world["carol"])  # T1 labels s2 turn by turn
    turn = _turn(world, "s2")
    assert client.get(reverse("card", args=["ag", turn.pk])).status_code == 200
    # and s1, assigned to E1 alone, is not hers
    assert client.get(reverse("card", args=["ag", _turn(world).pk])).status_code == 404


def test_the_api_lists_no_card_of_an_episode_group_and_refuses_its_labels(client, world, alice):
    client.force_login(alice)
    listed = client.get("/api/studies/ag/cards/").json()
    assert listed["count"] == 0 and listed["results"] == []
    turn = _turn(world)
    assert client.get(f"/api/studies/ag/cards/{turn.pk}/").status_code == 403
    response = client.put(
        f"/api/studies/ag/cards/{turn.pk}/annotation/",
        {"labels": ["scope_overreach"]},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert "by episodes" in response.json()["detail"]
    assert not Annotation.objects.exists()


def test_my_cards_page_lists_only_the_turn_groups_cards(client, world):
    client.force_login(world["carol"])
    page = client.get(reverse("my_cards", args=["ag"])).content.decode()
    s2 = world["s2"]
    for turn in s2.turns.all():
        assert reverse("card", args=["ag", turn.pk]) in page
    for turn in world["s1"].turns.all():
        assert reverse("card", args=["ag", turn.pk]) not in page
