"""/healthz: what the container's HEALTHCHECK and compose's web health check call. No login,
200 while the database answers, 503 when it does not, and nothing in the body but ok or
unavailable (no error text, hosts or versions)."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper

pytestmark = pytest.mark.django_db


def test_healthz_answers_ok_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert "no-cache" in response["Cache-Control"]
    assert client.head("/healthz").status_code == 200


def test_healthz_is_503_and_says_nothing_more_when_the_database_is_down(client, monkeypatch):
    secret = "could not connect to server at 10.1.2.3 port 5432 as user cardsort"

    def down(self, *args, **kwargs):
        raise OperationalError(secret)

    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", down)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.content == b"unavailable\n"
    assert b"10.1.2.3" not in response.content


def test_healthz_takes_no_post(client):
    assert client.post("/healthz").status_code == 405
