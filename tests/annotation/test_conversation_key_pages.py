"""The pages name a conversation by its key (issue 20, defect 1): two conversations with one
external id (WildChat's hashes repeat) could not be told apart on any page. The card title,
my cards, the discussion page, the to-discuss and moderation queues, the timeline, and the
lead's conversations page, browser and conversation page show the key (the id itself when
it is unique, `x~2` for the second x)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Conversation
from tests.factories import label, make_conversation, make_group, study_url

pytestmark = pytest.mark.django_db

LONG = "h" * 60  # an id longer than a title shows: the suffix must survive the cut


@pytest.fixture
def twins(study, alice, bob, moderator):
    """Two conversations with the id x and two with a long id, all in group A; alice and
    bob disagree on the second x's turn 1 (disputed) and the second long one's, where they
    stay apart in round 2 (escalated)."""
    group = make_group(study, "A", [alice, bob], moderator=moderator)
    made = [make_conversation(study, i, n_turns=1, group=group) for i in ("x", "x", LONG, LONG)]
    assert [c.key for c in made] == ["x", "x~2", LONG, f"{LONG}~2"]
    for conversation in (made[1], made[3]):
        turn = conversation.turns.get()
        label(turn, alice, "ambiguous_instruction")
        label(turn, bob, "must_do_omission")
    escalated = made[3].turns.get()
    label(escalated, alice, "ambiguous_instruction", round=2)
    label(escalated, bob, "must_do_omission", round=2)
    return made


def page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_the_card_discussion_and_timeline_show_the_key(client, alice, twins):
    turn = twins[1].turns.get()
    for name in ("card", "discussion", "card_timeline"):
        html = page(client, alice, study_url(name, turn))
        assert "x~2</" in html or "x~2," in html, name


def test_a_long_id_keeps_its_suffix_when_cut(client, alice, twins):
    turn = twins[3].turns.get()
    html = page(client, alice, study_url("card", turn))
    assert "…~2" in html and f"{LONG}~2" not in html.split("<title>")[0]


def test_my_cards_and_the_queues_show_the_key(client, alice, moderator, twins):
    html = page(client, alice, study_url("my_cards"))
    assert ">x</a>" in html and ">x~2</a>" in html
    assert "x~2 #1" in page(client, alice, study_url("discuss_queue"))
    html = page(client, moderator, study_url("moderate_queue"))
    assert "x~2 #1" in html and "…~2 #1" in html


def test_the_leads_pages_show_the_key(client, lead, twins):
    for name in ("lead_conversations", "lead_browse"):
        html = page(client, lead, study_url(name))
        assert ">x</a>" in html and ">x~2</a>" in html, name
    second = twins[1]
    html = page(client, lead, reverse("lead_conversation", args=["s1", second.pk]))
    assert "Conversation x~2" in html and "<dt>External id</dt><dd>x (" in html


def test_the_browser_finds_a_conversation_by_its_key(client, lead, twins):
    html = page(client, lead, study_url("lead_browse") + "?q=x~2")
    shown = Conversation.objects.get(key="x~2")
    assert reverse("lead_conversation", args=["s1", shown.pk]) in html
    first = Conversation.objects.get(key="x")
    assert reverse("lead_conversation", args=["s1", first.pk]) + '"' not in html
