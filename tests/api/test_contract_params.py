"""The schema is a contract (issue 12): every 400 the API gives is documented, `round` has
its minimum, object-valued or repeated `page` and `round` are a 400 naming them, and the
request bodies the schema advertises are the ones that work."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from annotation.models import Job, JobKind, JobStatus
from tests.factories import make_conversation, make_group, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


def _operation(schema, path: str, method: str = "get") -> dict:
    return schema["paths"][path][method]


def _query(operation: dict) -> dict:
    return {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}


@pytest.mark.parametrize(
    "path",
    [
        "/api/studies/{slug}/cards/",  # ?done=null
        "/api/studies/{slug}/agreement/",  # ?round=null
        "/api/studies/{slug}/annotations/",  # ?page=x
    ],
)
def test_the_operations_that_answer_400_document_it(schema, path):
    assert "400" in _operation(schema, path)["responses"]


def test_every_operation_documents_401_and_429(schema):
    missing = [
        f"{method} {path}"
        for path, operations in schema["paths"].items()
        if path.startswith("/api/studies/")
        for method, operation in operations.items()
        if not {"401", "429"} <= set(operation["responses"])
    ]
    assert missing == []


def test_round_and_page_have_their_minimum(schema):
    agreement = _query(_operation(schema, "/api/studies/{slug}/agreement/"))
    cards = _query(_operation(schema, "/api/studies/{slug}/cards/"))

    assert agreement["round"]["minimum"] == 1
    assert cards["page"]["minimum"] == 1


def test_done_null_is_a_400_naming_it(study, alice):
    make_conversation(study, "c1", n_turns=1, group=make_group(study, "g1", annotators=[alice]))

    response = token_client(alice).get("/api/studies/s1/cards/", {"done": "null"})

    assert response.status_code == 400
    assert list(response.json()) == ["done"]


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/api/studies/s1/agreement/?round=null", "round"),
        ("/api/studies/s1/agreement/?round=0", "round"),
        ("/api/studies/s1/agreement/?round[a]=1", "round"),
        ("/api/studies/s1/agreement/?round=1&round=2", "round"),
        ("/api/studies/s1/annotations/?page[a]=1", "page"),
        ("/api/studies/s1/annotations/?page=abc", "page"),
        ("/api/studies/s1/annotations/?page=1&page=2", "page"),
        ("/api/studies/s1/annotations/?round[x]=1", "round"),
    ],
)
def test_bad_or_object_valued_page_and_round_are_a_400_naming_them(study, lead, url, name):
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        params={"round": 1},
        result={"ok": True},
    )

    response = token_client(lead).get(url)

    assert response.status_code == 400, response.content
    assert list(response.json()) == [name]


def test_a_page_past_the_last_is_a_404(study, lead):
    response = token_client(lead).get("/api/studies/s1/annotations/", {"page": 2})

    assert response.status_code == 404


def test_the_annotation_put_advertises_json_only(schema):
    operation = _operation(schema, "/api/studies/{slug}/cards/{turn_id}/annotation/", "put")

    assert list(operation["requestBody"]["content"]) == ["application/json"]


def test_a_multipart_annotation_put_is_refused_as_unsupported(study, alice):
    conversation = make_conversation(
        study, "c1", n_turns=1, group=make_group(study, "g1", annotators=[alice])
    )
    url = f"/api/studies/s1/cards/{conversation.turns.get().pk}/annotation/"

    response = token_client(alice).put(url, {"labels": ["code_rollback"]}, format="multipart")

    assert response.status_code == 415


def test_the_import_takes_the_file_as_a_plain_form_field_too(study, lead, settings, tmp_path):
    """The schema's `format: binary` part, sent without a file name (`curl -F 'file=<x'`,
    schemathesis): a job, not a 400 "not a file"."""
    settings.MEDIA_ROOT = tmp_path
    record = '{"conversation": "c1", "turn": 1, "annotator": "dora", "labels": []}\n'

    response = token_client(lead).post(
        "/api/studies/s1/annotations/import/", {"file": record}, format="multipart"
    )

    assert response.status_code == 202, response.content
    assert Job.objects.get().params["files"][0]["name"] == "upload.jsonl"


def test_an_unknown_body_field_is_a_400_naming_it(study, lead):
    response = token_client(lead).post(
        "/api/studies/s1/exports/", {"format": "csv", "with_txt": True}, format="json"
    )

    assert response.status_code == 400
    assert list(response.json()) == ["with_txt"]


@pytest.mark.parametrize("value", ["0", "yes", "on"])
def test_a_multipart_flag_is_true_or_false_as_the_schema_says(study, lead, value):
    response = token_client(lead).post(
        "/api/studies/s1/annotations/import/",
        {"file": "{}\n", "judge": value},
        format="multipart",
    )

    assert response.status_code == 400
    assert list(response.json()) == ["judge"]
