"""The API is throttled (issue 12): past its user's rate (settings.REST_FRAMEWORK, from
API_THROTTLE_USER / API_THROTTLE_ANON) a client gets 429 with Retry-After, and other users
keep their own count. Requests without valid credentials count against their address
(issue 24, point 9): past the anonymous rate the address gets 429 whatever it sends, so
tokens cannot be guessed at will."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import pytest
import redis
from django.conf import settings
from rest_framework.test import APIClient
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


def bad_token(address: str = "10.0.0.1", **headers) -> APIClient:
    client = APIClient(REMOTE_ADDR=address, **headers)
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    return client


def test_an_address_past_60_failed_authentications_a_minute_gets_429(alice):
    """docs/api.md's promise: 60 a minute from an address without valid credentials."""
    anonymous, guesser = APIClient(REMOTE_ADDR="10.0.0.1"), bad_token("10.0.0.1")
    answers = [anonymous.get("/api/studies/").status_code for _ in range(30)]
    answers += [guesser.get("/api/studies/s1/").status_code for _ in range(30)]
    assert answers == [401] * 60

    refused = guesser.get("/api/studies/")

    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "Too many requests without valid credentials" in refused.json()["detail"]
    # a right token from that address is refused too: a 429 tells no guess from another
    right = token_client(alice)
    assert right.get("/api/studies/", REMOTE_ADDR="10.0.0.1").status_code == 429
    assert anonymous.get("/api/schema/").status_code == 429
    # other addresses keep their own count
    assert bad_token("10.0.0.2").get("/api/studies/").status_code == 401
    assert right.get("/api/studies/", REMOTE_ADDR="10.0.0.2").status_code == 200


@pytest.fixture
def three_failures_a_minute(monkeypatch):
    monkeypatch.setitem(UserRateThrottle.THROTTLE_RATES, "anon", "3/minute")


def test_only_failed_authentications_count(alice, three_failures_a_minute):
    right = token_client(alice)
    assert {right.get("/api/studies/").status_code for _ in range(10)} == {200}
    assert [bad_token().get("/api/studies/").status_code for _ in range(4)] == [401] * 3 + [429]


def test_behind_a_proxy_each_client_address_counts_for_itself(
    db, settings, three_failures_a_minute
):
    settings.LOGIN_PROXY_COUNT = 1
    proxy = "10.0.0.9"

    def via_proxy(forwarded: str) -> int:
        client = bad_token(proxy, HTTP_X_FORWARDED_FOR=forwarded)
        return client.get("/api/studies/").status_code

    assert [via_proxy("203.0.113.5") for _ in range(3)] == [401] * 3
    assert via_proxy("203.0.113.5") == 429
    # what the client writes into the header itself does not move it elsewhere
    assert via_proxy("198.51.100.1, 203.0.113.5") == 429
    # another client behind the same proxy is not refused
    assert via_proxy("203.0.113.6") == 401


def test_the_rates_come_from_the_settings(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert set(rates) == {"anon", "user"}
    assert UserRateThrottle().parse_rate(rates["user"])[0] > 0


# --- shared by every process with CACHE_URL (production runs several gunicorn workers) ------

THROTTLE_IN_A_PROCESS = """
import sys
from types import SimpleNamespace
import django
django.setup()
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import UserRateThrottle
from django.conf import settings
assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache"), settings.CACHES
request = Request(APIRequestFactory().get("/api/studies/"))
request.user = SimpleNamespace(pk=int(sys.argv[2]), is_authenticated=True)
answers = []
for _ in range(int(sys.argv[1])):
    throttle = UserRateThrottle()
    throttle.rate = "3/minute"
    throttle.num_requests, throttle.duration = throttle.parse_rate(throttle.rate)
    answers.append(throttle.allow_request(request, None))
print(answers)
"""


def python_with(cache_url: str, code: str, *args: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter with the app's settings and CACHE_URL."""
    env = dict(os.environ, CACHE_URL=cache_url, DJANGO_SETTINGS_MODULE="config.settings")
    env["DEBUG"] = "1"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def in_a_process(url: str, requests: int, user: int) -> str:
    out = python_with(url, THROTTLE_IN_A_PROCESS, str(requests), str(user))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.slow
def test_with_cache_url_every_process_counts_against_the_same_rate():
    # the machine's Redis (CI starts it); a user id no other run uses, its count removed after
    url = "redis://127.0.0.1:6379/13"
    user = random.randrange(10**9, 2 * 10**9)
    try:
        # two gunicorn workers: the first answers three requests, the second the fourth
        assert in_a_process(url, 3, user) == "[True, True, True]"
        assert in_a_process(url, 1, user) == "[False]"
    finally:
        keys = redis.Redis.from_url(url).keys(f"*throttle_user_{user}*")
        if keys:
            redis.Redis.from_url(url).delete(*keys)


FAILURES_IN_A_PROCESS = """
import sys
import django
django.setup()
from django.conf import settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle
from annotation.api.throttling import FailedAuthentications
assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache"), settings.CACHES
SimpleRateThrottle.THROTTLE_RATES["anon"] = "3/minute"
# both processes at the same instant: the count's windows are the clock's minutes, and the
# second process must not start in the next one
FailedAuthentications.timer = lambda self: float(sys.argv[3])
client = APIClient(REMOTE_ADDR=sys.argv[2], HTTP_HOST="127.0.0.1")
print([client.get("/api/studies/").status_code for _ in range(int(sys.argv[1]))])
"""


@pytest.mark.slow
def test_with_cache_url_failed_authentications_count_in_every_process():
    url = "redis://127.0.0.1:6379/13"
    address = f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"
    # the start of the current minute: the count's key then lives a whole minute in Redis (its
    # expiry is real time, wait + 1 s from the frozen instant), not the second or so left when
    # the instant fell at the minute's end and the second process started after the expiry
    now = str(time.time() // 60 * 60)
    try:
        # two gunicorn workers: the first answers three failures, the second is past the limit
        first = python_with(url, FAILURES_IN_A_PROCESS, "3", address, now)
        second = python_with(url, FAILURES_IN_A_PROCESS, "1", address, now)
        assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
        assert (first.stdout.strip(), second.stdout.strip()) == ("[401, 401, 401]", "[429]")
    finally:
        keys = redis.Redis.from_url(url).keys(f"*{address}*")
        if keys:
            redis.Redis.from_url(url).delete(*keys)


def test_cache_url_must_name_a_redis_server():
    out = python_with("memcached://x", "import django; django.setup()")
    assert out.returncode != 0
    assert "CACHE_URL must name a Redis server" in out.stderr
