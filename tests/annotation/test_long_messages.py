"""A message past CARDSORT_MESSAGE_DISPLAY_LIMIT is stored whole, shown cut on every page
that shows conversation text, its full text one click away as text/plain under exactly the
access of the page it is linked from; the earlier turns of a card come a window at a time
(annotation/messages.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Conversation, Role, Turn
from tests.factories import HTMX, label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

LIMIT = 1000
LONG = "word " * 600 + "THE-END"  # 3,007 characters, its tail past the limit


@pytest.fixture
def limit(settings):
    settings.CARDSORT_MESSAGE_DISPLAY_LIMIT = LIMIT
    return LIMIT


@pytest.fixture
def world(study, alice, bob, charlie, moderator, lead):
    """alice and bob label conv-a in g1 (moderated); charlie is in g2 with conv-b. Turn 2
    of conv-a holds the long message, as user text and reply; conv-a's system prompt too."""
    g1 = make_group(study, "g1", [alice, bob], moderator=moderator)
    g2 = make_group(study, "g2", [charlie])
    conv = make_conversation(study, "conv-a", n_turns=2, group=g1)
    Conversation.objects.filter(pk=conv.pk).update(system_prompt=LONG)
    conv.turns.filter(index=2).update(user_text=LONG, reply_text=LONG)
    make_conversation(study, "conv-b", n_turns=1, group=g2)
    return conv.turns.get(index=2)


def test_it_stores_the_message_whole_and_shows_it_cut_with_a_link(client, limit, alice, world):
    assert len(Turn.objects.get(pk=world.pk).user_text) == len(LONG)
    client.force_login(alice)
    html = client.get(reverse("card", args=["s1", world.pk])).content.decode()
    assert "THE-END" not in html
    assert html.count(f"Shown: the first 1,000 of {len(LONG):,} characters.") == 2
    link = reverse("card_text", args=["s1", world.pk, 2, "user"])
    assert f'href="{link}"' in html
    response = client.get(link)
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.content.decode() == LONG
    assert response["Content-Disposition"] == 'inline; filename="conv-a-turn-2-user.txt"'
    assert f'href="{link}?download=1"' in html
    download = client.get(link + "?download=1")
    assert download["Content-Disposition"].startswith("attachment;")


def test_a_short_message_has_no_notice(client, limit, alice, world):
    client.force_login(alice)
    turn1 = world.conversation.turns.get(index=1)
    html = client.get(reverse("card", args=["s1", turn1.pk])).content.decode()
    assert "Shown: the first" in html  # the system prompt, on turn 1
    assert html.count("Shown: the first") == 1


def test_the_discussion_context_and_browser_cut_it_too(client, limit, alice, bob, lead, world):
    label(world, alice, "code_rollback")
    label(world, bob)
    client.force_login(alice)
    html = client.get(reverse("discussion", args=["s1", world.pk])).content.decode()
    assert "THE-END" not in html and "Shown: the first 1,000" in html
    group = f"?group={world.conversation.groups.get().pk}"
    assert reverse("discussion_text", args=["s1", world.pk, 2, "user"]) + group in html
    assert (
        reverse("discussion_text", args=["s1", world.pk, 2, "user"]) + group + "&amp;download=1"
        in html
    )
    client.force_login(lead)
    url = reverse("lead_conversation", args=["s1", world.conversation_id])
    html = client.get(url).content.decode()
    assert "THE-END" not in html and html.count("Shown: the first 1,000") == 3
    text_url = reverse("lead_conversation_text", args=["s1", world.conversation_id, 1, "system"])
    assert text_url in html
    assert client.get(text_url).content.decode() == LONG


def test_the_earlier_turns_cut_it_too(client, limit, alice, world):
    world.conversation.turns.filter(index=1).update(reply_text=LONG)
    client.force_login(alice)
    html = client.get(reverse("card_context", args=["s1", world.pk]), **HTMX).content.decode()
    assert "THE-END" not in html and "Shown: the first 1,000" in html
    assert reverse("card_text", args=["s1", world.pk, 1, "reply"]) in html


def statuses(client, user, urls):
    client.force_login(user)
    return [client.get(u).status_code for u in urls]


@pytest.mark.parametrize("who", ["alice", "bob", "charlie", "moderator", "lead", "mallory"])
def test_the_full_text_has_exactly_the_access_of_its_page(client, limit, world, who):
    """Each full-text view answers each member as its page does: charlie, of another group,
    gets nothing; so does an outsider."""
    user = make_user(who)  # the fixture's user of that name, or mallory, an outsider
    t = ["s1", world.pk]
    conv = ["s1", world.conversation_id]
    for page, text in [
        (reverse("card", args=t), reverse("card_text", args=[*t, 2, "reply"])),
        (reverse("discussion", args=t), reverse("discussion_text", args=[*t, 2, "reply"])),
        (reverse("lead_conversation", args=conv),
         reverse("lead_conversation_text", args=[*conv, 2, "reply"])),
    ]:  # fmt: skip
        page_status, text_status = statuses(client, user, [page, text])
        assert page_status == text_status, (who, page)
        body = client.get(text).content.decode()
        assert ("THE-END" in body) == (text_status == 200)


def test_charlie_gets_nothing_of_another_groups_card(client, limit, charlie, world):
    client.force_login(charlie)
    for name, part in [("card_text", "user"), ("discussion_text", "reply")]:
        response = client.get(reverse(name, args=["s1", world.pk, 2, part]))
        assert response.status_code == 404 and b"THE-END" not in response.content


def test_a_card_reaches_only_its_own_and_earlier_turns(client, limit, alice, world):
    client.force_login(alice)
    turn1 = world.conversation.turns.get(index=1)
    assert client.get(reverse("card_text", args=["s1", turn1.pk, 2, "user"])).status_code == 404
    assert client.get(reverse("card_text", args=["s1", world.pk, 1, "user"])).status_code == 200
    assert client.get(reverse("card_text", args=["s1", world.pk, 2, "notes"])).status_code == 404


# -- the earlier turns, a window at a time -----------------------------------------------------


@pytest.fixture
def long_conversation(study, alice):
    group = make_group(study, "g1", [alice])
    conv = make_conversation(study, "long", n_turns=1, group=group)
    Turn.objects.bulk_create(
        Turn(conversation=conv, index=i, user_text=f"question {i}", reply_text=f"answer {i}")
        for i in range(2, 3001)
    )
    Conversation.objects.filter(pk=conv.pk).update(n_turns=3000)
    return conv.turns.get(index=3000)


def shown_turns(html: str) -> list[int]:
    import re

    return [int(n) for n in re.findall(r"User · turn (\d+)<", html)]


def test_a_card_deep_in_a_conversation_gets_the_nearest_turns_only(
    client, settings, alice, long_conversation
):
    settings.CARDSORT_CONTEXT_TURNS = 20
    client.force_login(alice)
    url = reverse("card_context", args=["s1", long_conversation.pk])
    response = client.get(url, **HTMX)
    html = response.content.decode()
    assert shown_turns(html) == list(range(2980, 3000))
    assert len(response.content) < 30_000  # every earlier turn was about 1 MB here
    assert f'hx-get="{url}?before=2980"' in html and "2979 more" in html
    html = client.get(f"{url}?before=2980", **HTMX).content.decode()
    assert shown_turns(html) == list(range(2960, 2980))
    html = client.get(f"{url}?before=15", **HTMX).content.decode()
    assert shown_turns(html) == list(range(1, 15)) and "hx-get" not in html


def test_the_window_refuses_a_bad_before_and_clamps_a_late_one(
    client, settings, alice, long_conversation
):
    settings.CARDSORT_CONTEXT_TURNS = 5
    client.force_login(alice)
    url = reverse("card_context", args=["s1", long_conversation.pk])
    response = client.get(f"{url}?before=x", **HTMX)
    assert response.status_code == 400 and b"before" in response.content
    # no turn at or after the card's own comes through ?before=
    html = client.get(f"{url}?before=99999", **HTMX).content.decode()
    assert shown_turns(html) == list(range(2995, 3000))


def test_the_discussion_context_is_windowed_too(client, settings, alice, lead, long_conversation):
    settings.CARDSORT_CONTEXT_TURNS = 20
    study = long_conversation.conversation.study
    assert study.role_of(lead) == Role.LEAD
    client.force_login(lead)
    url = reverse("discussion_context", args=["s1", long_conversation.pk])
    html = client.get(url, **HTMX).content.decode()
    assert shown_turns(html) == list(range(2980, 3000))
    assert "before=2980" in html and "group=" in html
