"""The diff partial (views/diff.py): who may fetch it (exactly who may open the card, or the
card's discussion page), what it shows (only conversation text, escaped) and its two views."""

from __future__ import annotations

import pytest
from django.utils.html import strip_tags

from annotation.models import Role, Turn
from tests.factories import HTMX, label, make_conversation, make_group, make_user, study_url

pytestmark = pytest.mark.django_db

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def group_a(study, alice, bob):
    return make_group(study, "A", [alice, bob], moderator=make_user("moderator"))


@pytest.fixture
def turns(study, group_a):
    """conv-a: turn 1 f1, turn 2 f2, turn 3 f3 (tests/factories: one python block each)."""
    return list(make_conversation(study, "conv-a", n_turns=3, group=group_a).turns.all())


def diff_url(turn, query: str = "") -> str:
    return study_url("card_diff", turn) + query


def text_of(response) -> str:
    """What the partial reads as (changed characters are marked inside a line)."""
    return strip_tags(response.content.decode())


def test_an_annotator_of_the_card_gets_the_diff_against_the_earlier_turn(client, alice, turns):
    client.force_login(alice)
    r = client.get(diff_url(turns[2]), **HTMX)
    assert r.status_code == 200
    text = text_of(r)
    assert "compared with turn 2" in text
    assert "return x * 2" in text and "return x * 3" in text


def test_another_group_and_non_members_get_a_404(client, study, charlie, turns):
    make_group(study, "B", [charlie])
    outsider = make_user("olga")
    for user in (charlie, outsider):
        client.force_login(user)
        assert client.get(diff_url(turns[2]), **HTMX).status_code == 404, user
        assert client.get(diff_url(turns[2])).status_code == 404, user


def test_the_moderator_of_the_group_and_a_lead_may_fetch_it(client, study, lead, turns):
    for user in (make_user("moderator"), lead):
        client.force_login(user)
        r = client.get(diff_url(turns[1]), **HTMX)
        assert r.status_code == 200, user
        assert "return x * 1" in text_of(r)


def test_a_moderator_of_another_group_gets_a_404(client, study, charlie, turns):
    make_group(study, "B", [charlie], moderator=make_user("mod-b"))
    client.force_login(make_user("mod-b"))
    assert client.get(diff_url(turns[1]), **HTMX).status_code == 404


def test_a_moderator_who_annotates_the_card_sees_it_as_an_annotator(client, study, bob, turns):
    """bob also moderates another group: his role does not open or close anything here."""
    make_group(study, "B", [], moderator=bob)
    client.force_login(bob)
    assert client.get(diff_url(turns[1]), **HTMX).status_code == 200


def test_anonymous_is_sent_to_log_in(client, turns):
    r = client.get(diff_url(turns[1]))
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_a_card_of_another_study_is_a_404(client, alice, turns):
    from tests.factories import make_study

    other = make_study("s2")
    other.add_member(alice, Role.ANNOTATOR)
    client.force_login(alice)
    r = client.get(study_url("card_diff", turns[1], slug="s2"), **HTMX)
    assert r.status_code == 404


def test_it_shows_no_labels_or_notes(client, alice, bob, turns):
    label(turns[1], bob, "code_rollback", note="bob-secret-note")
    label(turns[1], alice, "must_do_omission", note="alice-own-note")
    client.force_login(make_user("moderator"))
    html = client.get(diff_url(turns[1]), **HTMX).content.decode()
    for secret in ("bob-secret-note", "alice-own-note", "Code Rollback", "code_rollback"):
        assert secret not in html


def test_split_and_unified_views_and_a_button_to_switch(client, alice, turns):
    client.force_login(alice)
    split = client.get(diff_url(turns[1]), **HTMX).content.decode()
    assert 'class="diff split"' in split and "Unified view" in split
    unified = client.get(diff_url(turns[1], "?view=unified"), **HTMX).content.decode()
    assert 'class="diff unified"' in unified and "Side-by-side view" in unified
    assert "@@ -1,2 +1,2 @@" in unified


def test_the_switch_keeps_the_group_of_the_discussion_page(client, study, lead, turns, group_a):
    client.force_login(lead)
    html = client.get(diff_url(turns[1], f"?group={group_a.pk}"), **HTMX).content.decode()
    assert f"group={group_a.pk}&amp;view=unified" in html


def test_an_unknown_view_is_refused_by_name(client, alice, turns):
    client.force_login(alice)
    r = client.get(diff_url(turns[1], "?view=<b>sideways</b>"), **HTMX)
    assert r.status_code == 400
    assert r["Content-Type"].startswith("text/plain")
    assert "view" in r.content.decode() and "split or unified" in r.content.decode()


def test_no_earlier_code_and_no_code_say_so(client, alice, turns):
    Turn.objects.filter(pk=turns[0].pk).update(reply_text="Which language?")
    client.force_login(alice)
    assert "No earlier code in Python." in client.get(diff_url(turns[1]), **HTMX).content.decode()
    Turn.objects.filter(pk=turns[2].pk).update(reply_text="Done, no code.")
    assert "no code block" in client.get(diff_url(turns[2]), **HTMX).content.decode()


def test_hostile_code_is_escaped(client, alice, turns):
    Turn.objects.filter(pk=turns[0].pk).update(reply_text=f"```html\n<p>{EVIL}</p>\n```")
    Turn.objects.filter(pk=turns[1].pk).update(reply_text=f"```{EVIL}\n<p>{EVIL}!</p>\n```")
    client.force_login(alice)
    for view in ("split", "unified"):
        html = client.get(diff_url(turns[1], f"?view={view}"), **HTMX).content.decode()
        assert "<script>" not in html and "<img" not in html, view
        assert "&lt;script&gt;" in html


def test_a_group_that_is_not_a_number_is_no_such_card(client, lead, turns):
    client.force_login(lead)
    for group in ("x", "²", "-1"):
        assert client.get(diff_url(turns[1], f"?group={group}"), **HTMX).status_code == 404, group


def test_another_earlier_turn_may_be_picked_and_the_closest_comes_back(client, alice, turns):
    client.force_login(alice)
    closest = client.get(diff_url(turns[2]), **HTMX).content.decode()
    assert 'data-against="1"' in closest and 'data-against="2"' not in closest
    r = client.get(diff_url(turns[2], "?view=unified&against=1"), **HTMX)
    text = text_of(r)
    assert "compared with turn 1" in text and "return x * 1" in text
    assert "the closest code" in text and 'data-against="2"' in r.content.decode()


@pytest.mark.parametrize("against", ["3", "0x1", "-1", "4"])
def test_against_must_name_an_earlier_turn(client, alice, turns, against):
    client.force_login(alice)
    r = client.get(diff_url(turns[2], f"?against={against}"), **HTMX)
    assert (
        r.status_code == 400
        and "?against= must name an earlier turn (1 to 2)" in r.content.decode()
    )
