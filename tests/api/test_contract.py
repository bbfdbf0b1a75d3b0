"""schemathesis against the API's own OpenAPI schema, in-process through the WSGI app, as a
lead and as an annotator (DRF tokens): every check on (no 5xx, responses conform to the
schema, status codes, content types and headers documented). Deterministic and bounded:
`derandomize` and MAX_EXAMPLES per operation, so CI runs the same cases every time."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from rest_framework.authtoken.models import Token
from schemathesis.engine import events

from annotation.models import Kind, Role
from config.wsgi import application
from tests.factories import AMBIGUOUS, label, make_conversation, make_group, make_user

MAX_EXAMPLES = 25


def _auth(user) -> dict:
    token, _ = Token.objects.get_or_create(user=user)
    return {"Authorization": f"Token {token.key}"}


@pytest.fixture
def people(study, lead, alice, bob):
    """A lead (who annotates nothing), alice and bob in g1 (c1, one card disputed), dora in
    g2 (c2), a moderator of g1, and a job."""
    moderator = make_user("mod")
    g1 = make_group(study, "g1", annotators=[alice, bob], moderator=moderator)
    g2 = make_group(study, "g2", annotators=[make_user("dora")])
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    make_conversation(study, "c2", n_turns=2, group=g2)
    first = c1.turns.get(index=1)
    label(first, alice, AMBIGUOUS, note="mine")
    label(first, bob)
    study.add_member(make_user("expert"), Role.ANNOTATOR, Kind.EXPERT)
    return {"lead": lead, "annotator": alice}


@pytest.fixture
def keep_connection():
    """The WSGI handler closes the database connection after each request, which would end
    the test's transaction: as Django's test client does, keep it open."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture(params=["lead", "annotator"])
def api_schema(request, people, media, keep_connection):
    headers = _auth(people[request.param])
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", application, headers=headers
    )
    schema.config.update(headers=headers)
    return schema


def _run(schema) -> tuple[int, list[str]]:
    """Every phase schemathesis runs (examples, coverage, fuzzing, stateful): the number of
    cases sent and a line per failed check."""
    cases, failures = 0, []
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            cases += len(event.recorder.cases)
            for checks in event.recorder.checks.values():
                failures += [
                    f"{event.recorder.label}: {c.name}: {c.failure_info.failure.title}: "
                    f"{c.failure_info.failure.message[:300]}"
                    for c in checks
                    if c.failure_info is not None
                ]
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            failures.append(f"error: {event}")
    return cases, failures


def test_the_api_meets_its_schema(api_schema):
    api_schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)

    cases, failures = _run(api_schema)

    print(f"schemathesis: {cases} cases")
    assert not failures, "\n".join(sorted(set(failures)))
    assert cases > 100
