from __future__ import annotations

from django.core.management import call_command

from tests.factories import token_client


def test_it_serves_the_openapi_schema(alice):
    response = token_client(alice).get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/studies/{slug}/cards/{turn_id}/annotation/" in paths
    assert "put" in paths["/api/studies/{slug}/cards/{turn_id}/annotation/"]


def test_it_generates_a_valid_schema_without_warnings(tmp_path, db):
    # --fail-on-warn turns every drf-spectacular warning (untyped field, clashing
    # operation id, ...) into an error
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )

    assert "/api/studies/{slug}/annotations/:" in (tmp_path / "schema.yml").read_text()
