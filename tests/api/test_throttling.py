"""The API is throttled (issue 12): past its user's rate (settings.REST_FRAMEWORK, from
API_THROTTLE_USER / API_THROTTLE_ANON) a client gets 429 with Retry-After, and other users
keep their own count."""

from __future__ import annotations

import pytest
from rest_framework.throttling import UserRateThrottle

from annotation.models import Role
from tests.factories import token_client


@pytest.fixture
def three_a_minute(monkeypatch):
    monkeypatch.setitem(UserRateThrottle.THROTTLE_RATES, "user", "3/minute")


def test_past_its_rate_a_user_gets_429_with_retry_after(study, alice, bob, three_a_minute):
    study.add_member(alice, Role.ANNOTATOR)
    client = token_client(alice)
    assert [client.get("/api/studies/").status_code for _ in range(3)] == [200] * 3
    refused = client.get("/api/studies/")
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "Request was throttled" in refused.json()["detail"]
    # the count is per user
    assert token_client(bob).get("/api/studies/").status_code == 200


def test_the_rates_come_from_the_settings(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert set(rates) == {"anon", "user"}
    assert UserRateThrottle().parse_rate(rates["user"])[0] > 0
