"""Seeing the consolidation board locks one's own tag sets. The board shows everyone's free
tags on the cards; an expert who has tagged all their cards may open it, and could otherwise
go back and change their tags after seeing the others', so that what becomes their round-1
labels at the freeze would no longer be their own independent judgment."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import BoardVisit, TagSet
from annotation.opensort import tagging
from tests.opensort.tag_helpers import cards_of, open_sort_group, post_tags

pytestmark = pytest.mark.django_db


@pytest.fixture
def cards(study, alice, bob):
    return cards_of(study, open_sort_group(study, [alice, bob]), n=2)


def tag_all(client, user, cards, name):
    client.force_login(user)
    for turn in cards:
        assert post_tags(client, turn, name).status_code == 200
    return {
        t.pk: {x.name for x in TagSet.objects.get(turn=t, annotator=user).tags.all()} for t in cards
    }


def board_url(study) -> str:
    return reverse("board", args=[study.slug])


def test_an_expert_who_opens_the_board_is_asked_first_and_shown_no_tag(
    client, study, alice, bob, cards
):
    tag_all(client, bob, cards, "bobs secret tag")
    tag_all(client, alice, cards, "vague goal")
    r = client.get(board_url(study))
    html = r.content.decode()
    assert r.status_code == 200
    assert "your own tag sets are locked" in html
    assert "bobs secret tag" not in html
    assert not BoardVisit.objects.filter(user=alice).exists()
    # she can still change her tags: nothing is locked before she has seen the board
    r = post_tags(client, cards[0], "vague goal", "no tests")
    assert r.status_code == 200
    assert TagSet.objects.get(turn=cards[0], annotator=alice).tags.count() == 2


def test_after_seeing_the_board_her_tags_are_locked_and_kept(client, study, alice, bob, cards):
    tag_all(client, bob, cards, "bobs tag")
    before = tag_all(client, alice, cards, "vague goal")
    r = client.get(board_url(study) + "?confirm=1")
    assert r.status_code == 200 and "bobs tag" in r.content.decode()
    assert BoardVisit.objects.filter(study=study, user=alice).exists()
    r = post_tags(client, cards[0], "bobs tag")
    assert r.status_code == 422
    assert "Your tags are locked" in r.content.decode()
    after = {
        t.pk: {x.name for x in TagSet.objects.get(turn=t, annotator=alice).tags.all()}
        for t in cards
    }
    assert after == before
    # the card says so, and offers no tag input
    html = client.get(reverse("card", args=[study.slug, cards[0].pk])).content.decode()
    assert "Your tags are locked" in html and 'name="new_tag"' not in html
    # the analytics reveal the same tags: they lock too (her visit is already there)
    with pytest.raises(tagging.TagsLocked):
        tagging.save_tag_set(
            turn=cards[1],
            group=cards[1].conversation.assignments.get().group,
            annotator=alice,
            tags=[tagging.TagInput("x", "")],
        )


def test_the_analytics_lock_as_the_board_does(client, study, alice, bob, cards):
    tag_all(client, bob, cards, "bobs tag")
    tag_all(client, alice, cards, "vague goal")
    r = client.get(reverse("board_analytics", args=[study.slug]))
    assert r.status_code == 200
    assert BoardVisit.objects.filter(study=study, user=alice).exists()
    assert post_tags(client, cards[0], "other").status_code == 422


def test_a_lead_who_tags_nothing_is_not_asked(client, study, lead, alice, bob, cards):
    tag_all(client, alice, cards, "a")
    tag_all(client, bob, cards, "b")
    client.force_login(lead)
    html = client.get(board_url(study)).content.decode()
    assert "your own tag sets are locked" not in html
    assert "Open sort board" in html


def test_the_lock_is_per_study(client, study, alice, bob, cards):
    tag_all(client, alice, cards, "a")
    tag_all(client, bob, cards, "b")
    client.force_login(alice)
    client.get(board_url(study) + "?confirm=1")
    from tests.factories import make_study

    other = make_study("s2")
    turns = cards_of(other, open_sort_group(other, [alice, bob]), n=1)
    r = post_tags(client, turns[0], "free here", slug="s2")
    assert r.status_code == 200
