"""Login attempts are limited per username and per address (django-axes, issue 12): after
AXES_FAILURE_LIMIT wrong passwords the username is locked from every address, and the
address for every username; the locked-out login page says when to come back; a good login
clears the count."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import PASSWORD, make_user

LIMIT = 3


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def log_in(client, username: str, password: str, address: str):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == reverse("home")


def test_wrong_passwords_for_one_user_lock_that_user_from_any_address(client, alice, bob):
    for i in range(LIMIT - 1):
        assert log_in(client, "alice", "wrong", f"10.0.0.{i}").status_code == 200
    # the last failure allowed answers with the lockout page already
    assert log_in(client, "alice", "wrong", "10.0.0.5").status_code == 429
    locked = log_in(client, "alice", PASSWORD, "10.9.9.9")
    assert locked.status_code == 429
    text = locked.content.decode()
    assert "Too many failed logins (3) for this username or from this address" in text
    assert "Try again in 15 minutes" in text
    assert locked["Retry-After"] == "900"
    assert "_auth_user_id" not in client.session
    # bob, from the same new address, is not locked out
    assert logged_in(log_in(client, "bob", PASSWORD, "10.9.9.9"))


def test_wrong_passwords_from_one_address_lock_the_address_for_every_user(client, db):
    for name in ("u1", "u2", "u3", "carol"):
        make_user(name)
    for name in ("u1", "u2"):
        assert log_in(client, name, "wrong", "10.0.0.7").status_code == 200
    assert log_in(client, "u3", "wrong", "10.0.0.7").status_code == 429
    assert log_in(client, "carol", PASSWORD, "10.0.0.7").status_code == 429
    assert logged_in(log_in(client, "carol", PASSWORD, "10.0.0.8"))


def test_a_good_login_clears_the_failures(client, alice):
    for _ in range(LIMIT - 1):
        log_in(client, "alice", "wrong", "10.0.0.1")
    assert logged_in(log_in(client, "alice", PASSWORD, "10.0.0.1"))
    client.logout()
    for _ in range(LIMIT - 1):
        log_in(client, "alice", "wrong", "10.0.0.1")
    assert logged_in(log_in(client, "alice", PASSWORD, "10.0.0.1"))


def test_the_lockout_ends_after_the_cool_off(client, alice, settings):
    from datetime import timedelta

    from axes.models import AccessAttempt

    for _ in range(LIMIT):
        log_in(client, "alice", "wrong", "10.0.0.1")
    assert log_in(client, "alice", PASSWORD, "10.0.0.2").status_code == 429
    # a wrong password while locked out does not start the wait again
    before = sorted(AccessAttempt.objects.values_list("attempt_time", flat=True))
    log_in(client, "alice", "wrong", "10.0.0.2")
    assert sorted(AccessAttempt.objects.values_list("attempt_time", flat=True)) == before
    last = max(before)
    AccessAttempt.objects.update(attempt_time=last - timedelta(minutes=16))
    assert logged_in(log_in(client, "alice", PASSWORD, "10.0.0.2"))


def test_the_test_clients_login_goes_through_the_limits(client, alice):
    for _ in range(LIMIT):
        assert not client.login(username="alice", password="wrong")
    assert not client.login(username="alice", password=PASSWORD)
    assert client.get(reverse("home")).status_code == 302


def test_behind_a_proxy_the_clients_address_is_counted_not_one_it_wrote(client, alice, settings):
    settings.LOGIN_PROXY_COUNT = 1
    proxy = "10.0.0.1"

    def through_proxy(username, password, forwarded):
        return client.post(
            reverse("login"),
            {"username": username, "password": password},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    for i in range(LIMIT):  # one client behind the proxy, writing a new address each time
        through_proxy(f"nobody{i}", "wrong", f"192.0.2.{i}, 203.0.113.5")
    assert through_proxy("alice", PASSWORD, "203.0.113.5").status_code == 429
    # another client behind the same proxy is not locked out
    assert logged_in(through_proxy("alice", PASSWORD, "203.0.113.6"))
