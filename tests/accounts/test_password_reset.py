"""Everybody resets a forgotten password from the login page: Django's views in the app's
look, a link by mail that works once. An invited account that never set a password (its
invitation lost or expired) may use it too."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from tests.factories import make_user

pytestmark = pytest.mark.django_db

LINK = re.compile(r"http://testserver(/accounts/reset/\S+/)")
NEW = {"new_password1": "a-new-secret-9", "new_password2": "a-new-secret-9"}


def _reset(client, email: str) -> str:
    response = client.post(reverse("password_reset"), {"email": email})
    assert response.status_code == 302
    return LINK.search(mail.outbox[-1].body)[1]


def test_the_login_page_offers_it(client):
    body = client.get(reverse("login")).content.decode()
    assert f'href="{reverse("password_reset")}"' in body and "Forgot your password?" in body


def test_it_resets_a_password_once(client, alice):
    get_user_model().objects.filter(pk=alice.pk).update(email="alice@lab.org")
    link = _reset(client, "Alice@Lab.org")
    assert "Your username: alice" in mail.outbox[0].body

    form_page = client.get(link, follow=True)  # Django moves the token out of the URL first
    assert "Choose a new password" in form_page.content.decode()
    done = client.post(form_page.redirect_chain[-1][0], NEW, follow=True)
    assert "Password set" in done.content.decode()
    assert Client().login(username="alice", password="a-new-secret-9")

    again = Client().get(link, follow=True).content.decode()
    assert "This link does not work" in again


def test_an_unknown_address_sends_nothing_and_says_the_same(client, alice):
    response = client.post(reverse("password_reset"), {"email": "nobody@lab.org"}, follow=True)
    assert "Check your email" in response.content.decode()
    assert mail.outbox == []


def test_an_invited_account_without_a_password_may_reset(client):
    dana = make_user("dana")
    dana.set_unusable_password()
    dana.email = "dana@lab.org"
    dana.save()
    link = _reset(client, "dana@lab.org")
    form_page = client.get(link, follow=True)
    client.post(form_page.redirect_chain[-1][0], NEW)
    assert Client().login(username="dana", password="a-new-secret-9")


# --- asking for a reset is rate-limited (annotation/accounts/reset_limits.py) ---------------


def test_one_email_address_gets_a_few_mails_an_hour_and_the_page_says_the_same(
    client, alice, bob, settings
):
    settings.PASSWORD_RESET_PER_EMAIL = 3
    get_user_model().objects.filter(pk=alice.pk).update(email="alice@lab.org")
    pages = [
        client.post(reverse("password_reset"), {"email": "alice@lab.org"}, follow=True)
        for _ in range(5)
    ]
    assert len(mail.outbox) == 3
    # the fourth and fifth look like any other: nothing tells whether the address has an
    # account or was refused
    assert all("Check your email" in p.content.decode() for p in pages)
    assert {p.status_code for p in pages} == {200}
    client.post(reverse("password_reset"), {"email": "ALICE@lab.org"})
    assert len(mail.outbox) == 3  # the same address in other letters counts too
    # another member's mail still goes
    get_user_model().objects.filter(pk=bob.pk).update(email="bob@lab.org")
    client.post(reverse("password_reset"), {"email": "bob@lab.org"})
    assert [m.to for m in mail.outbox[3:]] == [["bob@lab.org"]]


def test_one_address_asking_too_often_gets_429_and_no_mail(client, alice, bob, settings):
    settings.PASSWORD_RESET_PER_ADDRESS = 4
    get_user_model().objects.filter(pk=bob.pk).update(email="bob@lab.org")
    for i in range(4):
        client.post(reverse("password_reset"), {"email": f"someone{i}@lab.org"})
    refused = client.post(reverse("password_reset"), {"email": "bob@lab.org"})
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 3600
    body = refused.content.decode()
    assert "Too many reset requests" in body and "no mail was sent" in body
    assert mail.outbox == []
    # another address is not held back
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert other.post(reverse("password_reset"), {"email": "bob@lab.org"}).status_code == 302
    assert len(mail.outbox) == 1


def test_behind_a_proxy_the_clients_address_is_counted(client, bob, settings):
    settings.PASSWORD_RESET_PER_ADDRESS = 2
    settings.LOGIN_PROXY_COUNT = 1
    get_user_model().objects.filter(pk=bob.pk).update(email="bob@lab.org")
    first = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")
    for _ in range(2):
        assert first.post(reverse("password_reset"), {"email": "x@lab.org"}).status_code == 302
    assert first.post(reverse("password_reset"), {"email": "x@lab.org"}).status_code == 429
    # the same proxy, another client
    second = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert second.post(reverse("password_reset"), {"email": "bob@lab.org"}).status_code == 302
    assert len(mail.outbox) == 1
