"""The card's time endpoint (POST /s/<slug>/cards/<id>/time/): static/js/timer.js reports
the active time an annotator spent on a card in small increments; only an annotator of the
card adds time, an increment is a whole number of milliseconds within the caps, and bad
input gets a 400 naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation import timing
from annotation.models import CardTime, Role
from tests.factories import PASSWORD, make_conversation, make_group, make_user, study_url


@pytest.fixture
def card(study, alice, bob):
    group = make_group(study, "g1", [alice, bob], moderator=make_user("moderator"))
    return make_conversation(study, "c1", n_turns=2, group=group).turns.get(index=1)


def client_of(user) -> Client:
    client = Client()
    client.login(username=user.username, password=PASSWORD)
    return client


def report(client, turn, ms):
    data = {} if ms is None else {"ms": ms}
    return client.post(study_url("card_time", turn), data)


def active_ms(turn, user) -> int | None:
    row = CardTime.objects.filter(turn=turn, annotator=user).first()
    return None if row is None else row.active_ms


def last_report_ago(turn, user, seconds: float) -> None:
    """Move the annotator's last report on the card `seconds` into the past."""
    past = timezone.now() - timedelta(seconds=seconds)
    CardTime.objects.filter(turn=turn, annotator=user).update(updated_at=past)


def test_it_adds_the_reported_time_to_the_annotators_row(card, alice):
    response = report(client_of(alice), card, 15_000)
    assert response.status_code == 200
    assert response.json() == {"added_ms": 15_000, "active_ms": 15_000}
    assert active_ms(card, alice) == 15_000


def test_it_adds_reports_up_and_keeps_each_annotator_apart(card, alice, bob):
    alice_client = client_of(alice)
    report(alice_client, card, 15_000)
    last_report_ago(card, alice, 20)
    assert report(alice_client, card, 14_500).status_code == 200
    assert report(client_of(bob), card, 3_000).status_code == 200
    assert active_ms(card, alice) == 29_500
    assert active_ms(card, bob) == 3_000


def test_two_tabs_reporting_a_moment_apart_both_count(card, alice):
    # two tabs on one card each report what they counted; small increments a moment apart
    # (within the slack for network delays) both land, added with F()
    first, second = client_of(alice), client_of(alice)
    assert report(first, card, 1_200).status_code == 200
    assert report(second, card, 800).status_code == 200
    assert active_ms(card, alice) == 2_000


def test_it_refuses_whoever_does_not_annotate_the_card_with_404(study, card, alice, charlie):
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    moderator = make_user("moderator")
    for user in (charlie, lead, moderator):
        assert report(client_of(user), card, 1_000).status_code == 404, user
    assert not CardTime.objects.exists()


def test_it_refuses_a_card_of_another_group_with_404(study, card, alice, charlie):
    other = make_group(study, "g2", [charlie])
    theirs = make_conversation(study, "c2", n_turns=1, group=other).turns.get()
    assert report(client_of(alice), theirs, 1_000).status_code == 404
    assert not CardTime.objects.filter(annotator=alice).exists()


def test_anonymous_reports_add_nothing(card):
    response = report(Client(), card, 1_000)
    assert response.status_code in (302, 403)
    assert not CardTime.objects.exists()


@pytest.mark.parametrize("ms", [None, "", "abc", "1.5", "1e3", "-5", "0", " 12", "١٢", "10" * 20])
def test_it_refuses_a_bad_increment_with_400_naming_ms(card, alice, ms):
    response = report(client_of(alice), card, ms)
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "ms"
    assert body["error"].startswith("ms: ")
    assert not CardTime.objects.exists()


def test_it_refuses_more_than_one_report_may_carry(card, alice):
    client = client_of(alice)
    response = report(client, card, timing.MAX_REPORT_MS + 1)
    assert response.status_code == 400
    assert "120000 ms" in response.json()["error"]
    assert active_ms(card, alice) is None
    assert report(client, card, timing.MAX_REPORT_MS).status_code == 200
    assert active_ms(card, alice) == timing.MAX_REPORT_MS


def test_it_refuses_more_than_the_time_since_the_last_report(card, alice):
    # a forged client cannot add hours: each report carries at most the wall time since the
    # previous one on this card, plus a little slack for network delays
    client = client_of(alice)
    assert report(client, card, 10_000).status_code == 200
    response = report(client, card, 10_000)
    assert response.status_code == 400
    assert "since your last report on this card" in response.json()["error"]
    assert active_ms(card, alice) == 10_000  # nothing of the refused report was added
    last_report_ago(card, alice, 30)
    assert report(client, card, 30_000).status_code == 200
    assert active_ms(card, alice) == 40_000
    last_report_ago(card, alice, 30)
    assert report(client, card, 30_000 + timing.SLACK_MS + 1_000).status_code == 400
    assert active_ms(card, alice) == 40_000


def test_it_is_csrf_protected_and_takes_the_token_as_a_form_field(card, alice):
    # sendBeacon cannot set headers: the token comes in the FormData, as a form field
    client = Client(enforce_csrf_checks=True)
    client.login(username="alice", password=PASSWORD)
    client.get(study_url("card", card))  # the card page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    url = study_url("card_time", card)
    assert client.post(url, {"ms": 1_000}).status_code == 403
    assert active_ms(card, alice) is None
    assert client.post(url, {"ms": 1_000, "csrfmiddlewaretoken": token}).status_code == 200
    assert active_ms(card, alice) == 1_000


def test_it_only_takes_posts(card, alice):
    assert client_of(alice).get(study_url("card_time", card)).status_code == 405
