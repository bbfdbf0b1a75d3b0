"""The API's schema and docs need a login (issue 12): anonymous, the schema is 401 and the
docs page sends to the login page; a token (schemathesis in CI) or a session gets both."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient

from tests.factories import PASSWORD, token_client


def test_anonymous_gets_no_schema(db):
    assert APIClient().get("/api/schema/", {"format": "json"}).status_code == 401


def test_a_token_gets_the_schema(alice):
    response = token_client(alice).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    assert "/api/studies/" in response.json()["paths"]


def test_anonymous_is_sent_to_log_in_for_the_docs(client, db):
    response = client.get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/api/docs/"


def test_logged_in_the_docs_and_their_script_are_served_from_here(client, alice):
    client.login(username="alice", password=PASSWORD)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>" not in html and "<style>" not in html  # the policy allows neither
    assert 'src="/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"' in html
    script = client.get("/api/docs/", {"script": ""})
    assert script.status_code == 200 and script["Content-Type"] == "application/javascript"
    assert client.get("/api/schema/", {"format": "json"}).status_code == 200
