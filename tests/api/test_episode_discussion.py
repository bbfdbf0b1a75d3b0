"""An episode's discussion in the API (issue 21), as the cards': the discussion (every
round's judgements once the reader may see them, the thread, the moderator's decision), a
comment through the page's own rules, and the moderator's decision through the decide
form's. The world: tests/episodes/session_world.py (E1: alice, bob; moderator moe; lead
lena; carol annotates a turn group)."""

from __future__ import annotations

import pytest

from annotation.models import EpisodeComment, EpisodeDecision, EpisodeJudgement
from tests.episodes.conftest import agents  # noqa: F401 (the agents study fixture)
from tests.episodes.session_world import RUN_LABEL, RUN_REASON, build
from tests.factories import token_client

pytestmark = pytest.mark.django_db

S = "/api/studies/ag"
VALID = {"valid": True, "labels": {"symptom": ["scope_overreach"], "damage_severity": ["DS1"]}}
INVALID = {"valid": False, "invalid_reason": "other"}
DECISION = {**INVALID, "rationale": "the evidence does not hold"}


@pytest.fixture
def world(agents, tmp_path, alice, bob):  # noqa: F811 (the fixture imported)
    w = build(agents, tmp_path, alice, bob)
    w.update(alice=alice, bob=bob, e1=w["extracted"][0])
    return w


def get(user, path, **params):
    return token_client(user).get(f"{S}/{path}", params)


def post(user, path, body):
    return token_client(user).post(f"{S}/{path}", body, format="json")


def judge(w, user, body, round=1):
    r = post(w[user], f"episodes/{w['e1'].pk}/judgements/", {**body, "round": round})
    assert r.status_code == 200, r.content


def escalate(w):
    """alice and bob differ in round 1 and in the study's one discussion round."""
    judge(w, "alice", VALID)
    judge(w, "bob", INVALID)
    judge(w, "alice", VALID, 2)
    judge(w, "bob", INVALID, 2)


def path(w, tail):
    return f"episodes/{w['e1'].pk}/{tail}/"


def test_the_discussion_shows_every_rounds_judgements_the_thread_and_the_decision(world):
    w = world
    escalate(w)
    post(w["alice"], path(w, "comments"), {"text": "the user asked for it"})
    body = get(w["moe"], path(w, "discussion")).json()
    assert (body["episode"], body["group"], body["status"], body["round"]) == (
        w["e1"].pk, "E1", "escalated", None
    )  # fmt: skip
    assert (body["conversation"], body["first_turn"], body["last_turn"]) == ("s1", 1, 2)
    rows = [(j["annotator"], j["round"], j["valid"]) for j in body["judgements"]]
    assert rows == [("alice", 1, True), ("bob", 1, False), ("alice", 2, True), ("bob", 2, False)]
    assert [(c["author"], c["round"], c["text"]) for c in body["comments"]] == [
        ("alice", 2, "the user asked for it")
    ]
    assert body["decision"] is None and body["can_decide"] and body["can_comment"]
    assert not get(w["alice"], path(w, "discussion")).json()["can_decide"]
    decided = post(w["moe"], path(w, "decision"), DECISION)
    assert decided.status_code == 201, decided.content
    after = get(w["alice"], path(w, "discussion")).json()
    assert (after["status"], after["method"]) == ("agreed", "moderator")
    assert {k: after["decision"][k] for k in ("valid", "invalid_reason", "decided_by")} == {
        "valid": False, "invalid_reason": "other", "decided_by": "moe",
    }  # fmt: skip
    assert after["decision"]["rationale"] == "the evidence does not hold"
    assert not after["can_comment"] and not after["can_decide"]


def test_an_annotator_reads_the_discussion_only_once_round_1_is_over_for_them(world):
    w = world
    judge(w, "alice", VALID)
    refused = get(w["alice"], path(w, "discussion"))
    assert refused.status_code == 403 and "round 1" in refused.json()["detail"]
    assert "scope_overreach" not in refused.content.decode()
    moderator = get(w["moe"], path(w, "discussion")).json()  # the moderator: always
    assert moderator["status"] == "open" and [j["annotator"] for j in moderator["judgements"]] == [
        "alice"
    ]
    judge(w, "bob", INVALID)
    opened = get(w["bob"], path(w, "discussion")).json()
    assert sorted(j["annotator"] for j in opened["judgements"]) == ["alice", "bob"]
    assert get(w["carol"], path(w, "discussion")).status_code == 404  # another group's


def test_the_runs_verdict_is_in_no_discussion(world):
    w = world
    escalate(w)
    for reader in ("alice", "moe", "lena"):
        text = get(w[reader], path(w, "discussion")).content.decode()
        assert RUN_REASON not in text and "confidence" not in text and "run_" not in text, reader
    assert RUN_LABEL not in get(w["moe"], f"episodes/{w['extracted'][1].pk}/discussion/").text


def test_a_comment_goes_through_the_pages_rules(world):
    w = world
    route = path(w, "comments")
    judge(w, "alice", VALID)
    early = post(w["alice"], route, {"text": "hm"})
    assert early.status_code == 409 and "round 1" in early.json()["detail"]
    moe_early = post(w["moe"], route, {"text": "hm"})  # may read, may not write in round 1
    assert moe_early.status_code == 409 and "round 1" in moe_early.json()["detail"]
    judge(w, "bob", INVALID)
    sent = post(w["bob"], route, {"text": "  the tests broke  "})
    assert sent.status_code == 201, sent.content
    assert (sent.json()["author"], sent.json()["round"], sent.json()["text"]) == (
        "bob", 2, "the tests broke"
    )  # fmt: skip
    again = post(w["bob"], route, {"text": "the tests broke"})  # a double submit: kept once
    assert again.status_code == 200 and EpisodeComment.objects.count() == 1
    assert post(w["lena"], route, {"text": "lead here"}).status_code == 201
    assert post(w["carol"], route, {"text": "x"}).status_code == 404
    for body, field in (({"text": "   "}, "text"), ({}, "text"), ({"text": "a", "x": 1}, "x")):
        bad = post(w["bob"], route, body)
        assert bad.status_code == 400 and field in bad.json(), body
    assert EpisodeComment.objects.count() == 2


def test_a_too_long_comment_is_a_400_naming_text(world, settings):
    w = world
    settings.CARDSORT_MAX_COMMENT_CHARS = 10
    judge(w, "alice", VALID)
    judge(w, "bob", INVALID)
    bad = post(w["bob"], path(w, "comments"), {"text": "x" * 11})
    assert bad.status_code == 400 and "text" in bad.json()
    assert not EpisodeComment.objects.exists()


def test_only_its_moderator_or_a_lead_decides_an_escalated_episode(world):
    w = world
    route = path(w, "decision")
    judge(w, "alice", VALID)
    judge(w, "bob", INVALID)
    early = post(w["moe"], route, DECISION)  # disputed: not escalated yet
    assert early.status_code == 409 and EpisodeDecision.objects.count() == 0
    judge(w, "alice", VALID, 2)
    judge(w, "bob", INVALID, 2)
    assert post(w["alice"], route, DECISION).status_code == 403
    assert post(w["carol"], route, DECISION).status_code == 404
    decided = post(w["lena"], route, {**VALID, "rationale": "scope, clearly"})
    assert decided.status_code == 201, decided.content
    assert decided.json()["labels"] == VALID["labels"] and decided.json()["from_round"] == 2
    assert decided.json()["decided_by"] == "lena"
    twice = post(w["moe"], route, DECISION)
    assert twice.status_code == 409 and "already decided" in twice.json()["detail"]
    stored = EpisodeDecision.objects.get()
    assert (stored.decided_by, stored.valid) == (w["lena"], True)
    assert post(w["alice"], path(w, "comments"), {"text": "late"}).status_code == 409


def test_a_bad_decision_is_a_400_naming_the_field(world):
    w = world
    escalate(w)
    cases = [
        ({**INVALID}, "rationale"),
        ({**INVALID, "rationale": "   "}, "rationale"),
        ({"valid": False, "rationale": "r"}, "invalid_reason"),
        ({"valid": True, "invalid_reason": "other", "rationale": "r"}, "invalid_reason"),
        ({"valid": True, "labels": {"symptom": ["nope"]}, "rationale": "r"}, "labels"),
        ({**INVALID, "labels": {"symptom": ["scope_overreach"]}, "rationale": "r"}, "labels"),
        ({**INVALID, "rationale": "r", "round": 2}, "round"),
        ({"valid": "no", "rationale": "r"}, "valid"),
    ]
    for body, field in cases:
        response = post(w["moe"], path(w, "decision"), body)
        assert response.status_code == 400, body
        assert field in response.json(), (body, response.json())
    assert not EpisodeDecision.objects.exists()
    assert EpisodeJudgement.objects.count() == 4  # the judgements untouched
