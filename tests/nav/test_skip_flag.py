"""Skip a card, or flag it for later with a reason: the card goes to the end of the queue
and the next card is shown at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Annotation, CardSkip
from tests.factories import label

from .conftest import HTMX, url

pytestmark = pytest.mark.django_db


def skip(client, study, turn, **headers):
    return client.post(url("card_skip", study, turn), **headers)


def flag(client, study, turn, reason, **headers):
    return client.post(url("card_flag", study, turn), {"reason": reason}, **headers)


def queue_card(client, study) -> int:
    r = client.get(url("queue", study))
    assert r.status_code == 302, r.status_code
    return int(r["Location"].rstrip("/").rsplit("/", 1)[-1])


def test_it_skips_and_shows_the_next_card(client, study, alice, turns):
    client.force_login(alice)
    r = skip(client, study, turns[0], **HTMX)
    assert r.status_code == 200
    html = r.content.decode()
    assert html.lstrip().startswith(f'<div id="card" data-turn-id="{turns[1].pk}"')
    assert r["HX-Push-Url"] == url("card", study, turns[1])
    assert CardSkip.objects.get().kind == "skip"
    assert not Annotation.objects.exists()


def test_without_javascript_a_skip_redirects_to_the_next_card(client, study, alice, turns):
    client.force_login(alice)
    r = skip(client, study, turns[1])
    assert (r.status_code, r["Location"]) == (302, url("card", study, turns[2]))


def test_a_skipped_card_comes_back_at_the_end_of_the_queue(client, study, alice, turns):
    client.force_login(alice)
    skip(client, study, turns[0], **HTMX)
    assert queue_card(client, study) == turns[1].pk
    for t in turns[1:3]:
        label(t, alice)
    # submitting the last fresh card leads to the skipped one, not to the queue's end
    r = client.post(url("card", study, turns[3]), {"no_smell": "1"}, **HTMX)
    assert f'data-turn-id="{turns[0].pk}"' in r.content.decode()
    assert queue_card(client, study) == turns[0].pk


def test_skipped_and_flagged_cards_come_back_oldest_first(client, study, alice, turns):
    client.force_login(alice)
    flag(client, study, turns[1], "unsure about the diff", **HTMX)
    skip(client, study, turns[0], **HTMX)
    CardSkip.objects.filter(turn=turns[1]).update(created_at=timezone.now() - timedelta(hours=1))
    for t in turns[2:]:
        label(t, alice)
    assert queue_card(client, study) == turns[1].pk
    r = client.post(url("card", study, turns[1]), {"types": ["code_rollback"]}, **HTMX)
    assert r.status_code == 200  # labelling a flagged card works as usual
    assert f'data-turn-id="{turns[0].pk}"' in r.content.decode()
    assert Annotation.objects.get(turn=turns[1]).codes == {"code_rollback"}


def test_skipping_the_last_card_left_shows_it_again(client, study, alice, turns):
    client.force_login(alice)
    for t in turns[:3]:
        label(t, alice)
    r = skip(client, study, turns[3], **HTMX)
    assert f'data-turn-id="{turns[3].pk}"' in r.content.decode()


def test_a_flag_records_its_reason_and_moves_on(client, study, alice, turns):
    client.force_login(alice)
    r = flag(client, study, turns[0], "  Is a refusal a smell?  ", **HTMX)
    assert f'data-turn-id="{turns[1].pk}"' in r.content.decode()
    row = CardSkip.objects.get()
    assert (row.kind, row.reason, row.annotator, row.turn) == (
        "flag",
        "Is a refusal a smell?",
        alice,
        turns[0],
    )


def test_the_latest_skip_or_flag_replaces_the_one_before(client, study, alice, turns):
    client.force_login(alice)
    flag(client, study, turns[0], "first thought", **HTMX)
    skip(client, study, turns[0], **HTMX)
    row = CardSkip.objects.get()
    assert (row.kind, row.reason) == ("skip", "")
    flag(client, study, turns[0], "second thought", **HTMX)
    assert CardSkip.objects.get().reason == "second thought"


@pytest.mark.parametrize("htmx", [True, False])
def test_a_flag_without_a_reason_is_refused_and_says_why(client, study, alice, turns, htmx):
    client.force_login(alice)
    r = flag(client, study, turns[0], "   ", **(HTMX if htmx else {}))
    assert r.status_code == 422
    assert "Not flagged: say why you flag this card" in r.content.decode()
    assert not CardSkip.objects.exists()


@pytest.mark.parametrize("htmx", [True, False])
def test_a_refused_flag_keeps_what_was_typed(client, study, alice, turns, htmx):
    client.force_login(alice)
    typed = "too long <b>" + "x" * 2000
    r = flag(client, study, turns[0], typed, **(HTMX if htmx else {}))
    html = r.content.decode()
    assert r.status_code == 422
    assert "Not flagged: the reason is 2012 characters long; keep it under 2000" in html
    assert "too long &lt;b&gt;" + "x" * 2000 in html
    assert not CardSkip.objects.exists()


def test_charlie_cannot_skip_or_flag_alices_card(client, study, charlie, other_group, turns):
    client.force_login(charlie)
    assert skip(client, study, turns[0]).status_code == 404
    assert flag(client, study, turns[0], "hm").status_code == 404
    assert not CardSkip.objects.exists()


def test_skip_and_flag_take_posts_only(client, study, alice, turns):
    client.force_login(alice)
    assert client.get(url("card_skip", study, turns[0])).status_code == 405
    assert client.get(url("card_flag", study, turns[0])).status_code == 405


def test_the_card_shows_the_skip_and_flag_buttons_and_my_flag(client, study, alice, turns):
    client.force_login(alice)
    flag(client, study, turns[0], "ask the lead about <refusals>", **HTMX)
    html = client.get(url("card", study, turns[0])).content.decode()
    assert 'title="Skip this card (s)"' in html and 'title="Flag this card for later (f)"' in html
    assert "You flagged this card" in html and "ask the lead about &lt;refusals&gt;" in html
    assert "js/skip.js" in html
