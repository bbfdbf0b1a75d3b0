"""Every string the API takes has its limit, and the schema shows it as the server applies
it (issue 24, point 10): a consensus rationale of 1,000,000 characters was stored. Free text
has its setting's limit (CARDSORT_MAX_*_CHARS, annotation/limits.py), a name or a code the
length of its column; `maxLength` counts the text as sent, and where blank is refused the
schema says `minLength: 1` and a pattern (blanks alone are trimmed to nothing). Over a limit:
a 400 naming the field, nothing saved. schemathesis (test_contract.py) checks the rest."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from annotation.limits import max_chars
from annotation.models import Annotation, CardState, CardStatus, Consensus, Proposal
from tests.factories import AMBIGUOUS, ROLLBACK, label, token_client

pytestmark = pytest.mark.django_db

NOTE, EVIDENCE, COMMENT = (max_chars(k) for k in ("note", "evidence", "comment"))

# (operation id, field; NAME[] an item of the array NAME) -> (maxLength, minLength)
LIMITS = {
    ("studies_cards_annotation_update", "labels[]"): (100, 1),  # Type.code
    ("studies_cards_annotation_update", "note"): (NOTE, None),
    ("studies_cards_annotation_update", "evidence"): (EVIDENCE, None),
    ("studies_cards_consensus_create", "labels[]"): (100, 1),
    ("studies_cards_consensus_create", "rationale"): (COMMENT, 1),
    ("studies_cards_proposals_create", "name"): (200, 1),  # Proposal.name
    ("studies_cards_proposals_create", "definition"): (COMMENT, 1),
    ("studies_cards_proposals_create", "reason"): (COMMENT, 1),
    ("studies_cards_proposals_create", "axis"): (50, None),  # Axis.code
    # query parameters compared with a column: a longer value can match nothing
    ("studies_annotations_list", "annotator"): (150, 1),  # User.username
    # Conversation.key, and the ~1 that names the first of a repeated external id
    ("studies_annotations_list", "conversation"): (272, 1),
    ("studies_conversations_list", "group"): (100, 1),  # Group.name
    ("studies_conversations_list", "external_id"): (255, 1),
    ("studies_conversations_list", "key"): (272, 1),
    ("studies_disputes_list", "group"): (100, 1),
    ("studies_consensus_list", "group"): (100, 1),
    ("studies_consensus_list", "conversation"): (272, 1),
    ("studies_judge_runs_create", "judge"): (100, 1),
    ("studies_judge_runs_create", "group"): (100, 1),
    ("studies_judge_runs_create", "conversations[]"): (255, 1),  # Conversation.external_id
    ("studies_judge_runs_create", "model"): (200, 1),
    ("studies_judge_runs_create", "run"): (100, 1),  # ExtractionRun.name
    ("studies_episodes_list", "conversation"): (272, 1),
    ("studies_episodes_list", "run"): (100, 1),  # ExtractionRun.name
    ("studies_episodes_list", "group"): (100, 1),
    ("studies_episodes_judgements_create", "invalid_reason"): (100, None),  # its column
    ("studies_episodes_comments_create", "text"): (COMMENT, 1),
    ("studies_episodes_decision_create", "invalid_reason"): (100, None),
    ("studies_episodes_decision_create", "rationale"): (COMMENT, 1),
}


def string_inputs(schema: dict) -> dict[tuple[str, str], dict]:
    """Every free string an operation takes, by (operation id, field): its JSON or multipart
    body's properties (NAME[] for an array's items) and its query parameters; enums and
    files are not free strings."""
    components = schema["components"]["schemas"]

    def resolve(s: dict) -> dict:
        while "$ref" in s or len(s.get("allOf", ())) == 1:
            s = components[s["$ref"].rsplit("/", 1)[1]] if "$ref" in s else s["allOf"][0]
        return s

    def free(s: dict) -> bool:
        return s.get("type") == "string" and "enum" not in s and "format" not in s

    found = {}
    for operations in schema["paths"].values():
        for operation in operations.values():
            name = operation["operationId"]
            for p in operation.get("parameters", []):
                if p["in"] == "query" and free(p["schema"]):
                    found[name, p["name"]] = p["schema"]
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for field, s in resolve(media["schema"]).get("properties", {}).items():
                    s = resolve(s)
                    if s.get("type") == "array" and free(resolve(s["items"])):
                        found[name, f"{field}[]"] = resolve(s["items"])
                    elif free(s):
                        found[name, field] = s
    return found


def test_every_string_the_api_takes_has_its_limits_in_the_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)

    found = string_inputs(schema)

    assert set(found) == set(LIMITS), "a string input without its expected limits"
    got = {key: (s.get("maxLength"), s.get("minLength")) for key, s in found.items()}
    assert got == LIMITS


def test_the_schema_says_what_else_is_refused():
    found = string_inputs(SchemaGenerator().get_schema(request=None, public=True))

    # no NUL anywhere (the database cannot store it); where blank is refused, a character
    # other than a blank (blanks alone are trimmed to nothing)
    assert all(s["not"] == {"pattern": "\\u0000"} for s in found.values())
    refuse_blank = {key for key, (_, least) in LIMITS.items() if least}
    assert {key for key, s in found.items() if s.get("pattern") == "\\S"} == refuse_blank
    assert not [s for s in found.values() if "oneOf" in s or s.get("pattern", "\\S") != "\\S"]


def test_the_limits_follow_the_settings(settings):
    settings.CARDSORT_MAX_COMMENT_CHARS = 50

    found = string_inputs(SchemaGenerator().get_schema(request=None, public=True))

    assert found["studies_cards_consensus_create", "rationale"]["maxLength"] == 50


@pytest.fixture
def card(cards_setup, alice, bob):
    """Card 1 of c1, disputed in g1 (alice and bob); the study's lead decides it."""
    _, c1, _ = cards_setup
    turn = c1.turns.get(index=1)
    label(turn, alice, AMBIGUOUS)
    label(turn, bob, ROLLBACK)
    return turn


def decide(lead, card, rationale: str):
    url = f"/api/studies/s1/cards/{card.pk}/consensus/"
    return token_client(lead).post(url, {"labels": [], "rationale": rationale}, format="json")


def test_a_rationale_over_the_limit_is_a_400_naming_it_and_nothing_is_decided(lead, card):
    response = decide(lead, card, "r" * 1_000_000)

    assert response.status_code == 400
    assert response.json() == {
        "rationale": ["Rationale: at most 20,000 characters (yours has 1,000,000)."]
    }
    assert not Consensus.objects.exists()
    assert CardState.objects.get(turn=card).status == CardStatus.DISPUTED
    # at the limit it is kept
    assert decide(lead, card, "r" * COMMENT).status_code == 201


def test_a_text_padded_with_blanks_past_its_limit_is_refused_as_sent(lead, card, settings):
    settings.CARDSORT_MAX_COMMENT_CHARS = 50

    response = decide(lead, card, "because" + " " * 50)

    assert response.status_code == 400
    assert response.json() == {"rationale": ["Rationale: at most 50 characters (yours has 57)."]}
    assert not Consensus.objects.exists()


@pytest.mark.parametrize("rationale", ["", "   ", "\n\t"])
def test_a_blank_rationale_is_refused(lead, card, rationale):
    assert decide(lead, card, rationale).status_code == 400
    assert not Consensus.objects.exists()


def body_over(field: str) -> tuple[str, str, dict]:
    """(endpoint, who, body) valid but for `field`, one character over its limit."""
    card = {"labels": [], "note": "", "evidence": ""}
    proposal = {"name": "N", "definition": "D", "reason": "R", "axis": ""}
    over = {
        "note": ("annotation", "alice", card | {"note": "n" * (NOTE + 1)}),
        "evidence": ("annotation", "alice", card | {"evidence": "e" * (EVIDENCE + 1)}),
        "labels": ("annotation", "alice", card | {"labels": ["c" * 101]}),
        "rationale": ("consensus", "lead", {"labels": [], "rationale": "r" * (COMMENT + 1)}),
        "name": ("proposals", "alice", proposal | {"name": "n" * 201}),
        "definition": ("proposals", "alice", proposal | {"definition": "d" * (COMMENT + 1)}),
        "reason": ("proposals", "alice", proposal | {"reason": "r" * (COMMENT + 1)}),
        "axis": ("proposals", "alice", proposal | {"axis": "a" * 51}),
    }
    return over[field]


@pytest.mark.parametrize(
    "field", ["note", "evidence", "labels", "rationale", "name", "definition", "reason", "axis"]
)
def test_each_text_of_a_body_over_its_limit_is_a_400_naming_it(card, alice, lead, field):
    endpoint, who, body = body_over(field)
    client = token_client({"alice": alice, "lead": lead}[who])
    url = f"/api/studies/s1/cards/{card.pk}/{endpoint}/"
    before = [m.objects.count() for m in (Annotation, Consensus, Proposal)]

    response = getattr(client, "put" if endpoint == "annotation" else "post")(url, body, "json")

    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert [m.objects.count() for m in (Annotation, Consensus, Proposal)] == before


def test_a_query_parameter_longer_than_its_column_is_a_400_naming_it(lead, card):
    response = token_client(lead).get("/api/studies/s1/annotations/", {"annotator": "a" * 151})

    assert response.status_code == 400
    assert list(response.json()) == ["annotator"]
