"""schemathesis against the API's own OpenAPI schema, in-process (the live server), as a
lead and as an annotator (DRF tokens): every check on (no 5xx, responses conform to the
schema, status codes, content types and headers documented), with the paths on the
fixture's study and objects so that every body is read: a string over its maxLength, under
its minLength or against its pattern must be refused, any other valid one accepted (but a
code the study's taxonomy does not have, below). Deterministic and bounded:
`derandomize` and MAX_EXAMPLES per operation, so CI runs the same cases every time."""

from __future__ import annotations

from collections import defaultdict

import pytest
import schemathesis
from rest_framework.authtoken.models import Token
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events

from annotation.models import Job, JobKind, JobStatus, Kind, Proposal, Role
from tests.factories import AMBIGUOUS, ROLLBACK, label, make_conversation, make_group, make_user

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 5
# Type and axis codes are a study's taxonomy's, data one schema for every study cannot list
# (their descriptions say where they are: GET .../taxonomy/): a schema-valid body with a code
# the study does not have, or a set of labels its axes refuse, is a 400 naming the field
# (tests/api/test_annotate_round.py and others pin which), so these operations may answer
# 400 to positive data. So may a judge run: its judge, group and sample are the study's
# (the registry's judges, the group's names and size; tests/judges/test_panel_api.py). Every
# other check and operation keeps schemathesis's defaults.
TAXONOMY_CODES = {
    "include-operation-id": [
        "studies_cards_annotation_update",
        "studies_cards_consensus_create",
        "studies_cards_proposals_create",
        "studies_judge_runs_create",
        # a reason code and {axis: [type codes]} are the study's (issue 21)
        "studies_episodes_judgements_create",
        "studies_episodes_decision_create",
    ],
    "checks": {
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "429"]
        }
    },
}


def _path_parameters(ids: dict) -> list[dict]:
    """The study and objects of `people` in the paths, so that every case reaches the view
    and its body is checked (a random slug or id is a 404 before any field is read)."""
    pinned = {
        "turn_id": {
            # alice's open card: she labels it, proposes a type on it
            "studies_cards_retrieve": ids["open"],
            "studies_cards_annotation_update": ids["open"],
            "studies_cards_proposals_create": ids["open"],
            # the disputed card: the lead decides it
            "studies_cards_discussion_retrieve": ids["disputed"],
            "studies_cards_consensus_create": ids["disputed"],
        },
        "conversation_id": {"studies_conversations_turns_list": ids["conversation"]},
        "job_id": {
            "studies_jobs_retrieve": ids["export"],
            "studies_jobs_download_retrieve": ids["export"],
        },
    }
    return [
        {"include-operation-id": [operation], "parameters": {name: value}}
        for name, values in pinned.items()
        for operation, value in values.items()
    ]


# seconds a request may take on a loaded CI machine (the schema is generated on demand)
TIMEOUT = 120


def _auth(user) -> dict:
    token, _ = Token.objects.get_or_create(user=user)
    return {"Authorization": f"Token {token.key}"}


@pytest.fixture
def people(transactional_db, study, lead, alice, bob, media):
    """Committed (schemathesis sends from its own thread, on its own connection).
    A lead (who annotates nothing); alice and bob in g1 (c1: card 1 disputed, card 2
    agreed, card 3 open), a moderator of g1, dora in g2 (c2); a proposal, a finished
    agreement job and a finished export with its file."""
    moderator = make_user("mod")
    g1 = make_group(study, "g1", annotators=[alice, bob], moderator=moderator)
    g2 = make_group(study, "g2", annotators=[make_user("dora")])
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    make_conversation(study, "c2", n_turns=2, group=g2)
    first, second = c1.turns.get(index=1), c1.turns.get(index=2)
    label(first, alice, AMBIGUOUS, note="mine")
    label(first, bob)
    label(second, alice, ROLLBACK)
    label(second, bob, ROLLBACK)
    study.add_member(make_user("expert"), Role.ANNOTATOR, Kind.EXPERT)
    Proposal.propose(study=study, turn=first, proposer=alice, name="N", definition="D", reason="R")
    Job.objects.create(
        study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, params={"round": 1}
    )
    export = Job.objects.create(
        study=study, kind=JobKind.EXPORT, status=JobStatus.DONE, result={"rows": 1}
    )
    path = media / "exports" / str(export.pk) / "s1-gold.csv"
    path.parent.mkdir(parents=True)
    path.write_text("conversation,turn\nc1,1\n")
    export.result_file = str(path.relative_to(media))
    export.save()
    ids = {"open": c1.turns.get(index=3).pk, "disputed": first.pk}
    ids |= {"conversation": c1.pk, "export": export.pk}
    return {"lead": lead, "annotator": alice, "ids": ids}


@pytest.fixture
def unthrottled(monkeypatch):
    """Every case comes from 127.0.0.1, some without the token on purpose (ignored_auth):
    the rates are test_throttling.py's, here a 429 would only hide what a case checks."""
    for scope in ("user", "anon"):
        monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, scope, "100000/minute")


@pytest.fixture(params=["lead", "annotator"])
def api_schema(request, people, live_server, unthrottled):
    """The schema as that user loads it (with their token: /api/schema/ may need login),
    sent to the app served in this process (pytest-django's live server, a thread: the
    same WSGI application, on real HTTP, so every check's requests go through)."""
    headers = _auth(people[request.param])
    schema = schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/?format=json",
        config=SchemathesisConfig.from_dict(
            {
                "parameters": {"slug": "s1"},
                "operations": [TAXONOMY_CODES, *_path_parameters(people["ids"])],
                # the same cases every run: no replay of an earlier run's cache or examples
                "cache": {"enabled": False},
                "generation": {"database": "none"},
            }
        ),
        headers=headers,
        timeout=TIMEOUT,
    )
    schema.config.update(headers=headers, request_timeout=TIMEOUT)
    return schema


def _run(schema) -> tuple[int, list[str], dict[str, set[int]]]:
    """Every phase schemathesis runs (examples, coverage, fuzzing, stateful): the number of
    cases sent, a line per failed check, and the statuses each operation answered."""
    cases, failures, statuses = 0, [], defaultdict(set)
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            cases += len(event.recorder.cases)
            for interaction in event.recorder.interactions.values():
                if interaction.response is not None:
                    statuses[event.recorder.label].add(interaction.response.status_code)
            for checks in event.recorder.checks.values():
                failures += [
                    f"{event.recorder.label}: {c.name}: {c.failure_info.failure.title}: "
                    f"{c.failure_info.failure.message[:300]}\n{c.failure_info.code_sample[:600]}"
                    for c in checks
                    if c.failure_info is not None
                ]
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            failures.append(f"error: {getattr(event, 'label', '')}: {event.value!r}")
    return cases, failures, statuses


WRITES = {"lead": ("consensus", "exports", "import"), "annotator": ("annotation", "proposals")}


def test_the_api_meets_its_schema(api_schema, request):
    api_schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)

    cases, failures, statuses = _run(api_schema)

    print(f"schemathesis as {request.node.callspec.id}: {cases} cases")
    assert not failures, "\n".join(sorted(set(failures)))
    # the run reached the views, not only the authentication: most operations answered 2xx
    answered = {label for label, codes in statuses.items() if any(200 <= c < 300 for c in codes)}
    assert len(answered) >= 8, statuses
    # and the bodies of the writes open to this user were read: each refused some (a 400)
    mine = WRITES[request.node.callspec.id]
    for operation, codes in statuses.items():
        if operation.startswith(("POST", "PUT")) and operation.rstrip("/").endswith(mine):
            assert 400 in codes, (operation, codes)
