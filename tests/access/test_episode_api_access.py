"""The API's episode routes in the access matrix (issue 21): each role's status on each
route, and every field each role gets: whoever judges the episode (an annotator, a lead who
annotates) gets nobody else's round-1 judgement through any route before round 1 is over;
a machine judge's judgement reaches nobody; the run's own verdict, labels and confidence
reach a lead who does not judge it only, never an annotator or a moderator. The world:
tests/access/test_episode_access.py (E1: annotator, co_annotator, lead_annotating; moderator;
the annotator judged round 1; a judge-bot judged too)."""

from __future__ import annotations

import json

import pytest

from annotation.models import EpisodeComment, EpisodeDecision, EpisodeJudgement, Source
from tests.access.test_episode_access import (
    ROLES,
    RUN_CONFIDENCE,
    RUN_REASON,
    shows_run_confidence,
)
from tests.access.test_episode_access import world as episode_world  # noqa: F401
from tests.access.test_episode_moderation_access import _escalate
from tests.factories import token_client

pytestmark = pytest.mark.django_db

SECRET = "normative_prior_bias"  # the annotator's round-1 reason
MACHINE_FIELDS = {"run_valid", "run_invalid_reason", "run_labels", "confidence"}
# (route, expected status for each role of ROLES)
GETS = [
    ("episodes/", (401, 200, 200, 200, 200, 200, 200, 404)),
    ("episodes/{e}/", (401, 200, 200, 404, 200, 200, 200, 404)),
    ("episodes/{e}/judgements/", (401, 200, 200, 404, 200, 200, 200, 404)),
    # the discussion: a 403 for whoever judges it while round 1 is under way (the card's)
    ("episodes/{e}/discussion/", (401, 403, 403, 404, 200, 200, 403, 404)),
]
# POST a judgement: the group's annotators only
POSTS = (401, 200, 200, 404, 403, 403, 200, 404)
# on an escalated episode: a comment (everyone of its group, its moderator, a lead) and the
# decision (its moderator, a lead who does not judge it; never one who judges it)
COMMENTS = (401, 201, 201, 404, 201, 201, 201, 404)
DECISIONS = (401, 403, 403, 404, 201, 201, 403, 404)


@pytest.fixture
def world(episode_world):  # noqa: F811 (the fixture imported)
    return episode_world


def client_of(world, role):
    from rest_framework.test import APIClient

    return APIClient() if role == "anonymous" else token_client(world["users"][role])


def url(world, route: str) -> str:
    return "/api/studies/ep/" + route.format(e=world["episode"].pk)


@pytest.mark.parametrize("route, statuses", GETS, ids=[g[0] for g in GETS])
def test_each_role_gets_the_routes_its_role_gives_it(world, route, statuses):
    got = {r: client_of(world, r).get(url(world, route)).status_code for r in ROLES}
    assert got == dict(zip(ROLES, statuses, strict=True))


def test_who_judges_it_posts_a_judgement_and_nobody_else(world):
    body = {"valid": False, "invalid_reason": "other"}
    route = url(world, "episodes/{e}/judgements/")
    got = {
        r: client_of(world, r).post(route, body, format="json").status_code
        for r in ROLES
        if r != "annotator"  # the annotator judged round 1 already
    }
    expected = dict(zip(ROLES, POSTS, strict=True))
    del expected["annotator"]
    assert got == expected


def _bodies(world, role: str) -> list[dict]:
    client = client_of(world, role)
    out = []
    for route, _ in GETS:
        response = client.get(url(world, route))
        if response.status_code == 200:
            out.append(response.json())
    return out


def _keys(data) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def _values(data) -> list:
    if isinstance(data, dict):
        return [x for v in data.values() for x in _values(v)]
    if isinstance(data, list):
        return [x for v in data for x in _values(v)]
    return [data]


@pytest.mark.parametrize("role", ["co_annotator", "lead_annotating"])
def test_who_judges_it_reads_no_one_elses_round_1_judgement(world, role):
    text = json.dumps(_bodies(world, role))
    assert SECRET not in text and '"annotator": "annotator"' not in text


@pytest.mark.parametrize("role", ["moderator", "lead"])
def test_a_moderator_or_lead_who_does_not_judge_it_reads_the_judgements(world, role):
    text = json.dumps(_bodies(world, role))
    assert SECRET in text and '"annotator": "annotator"' in text


@pytest.mark.parametrize("role", ROLES[1:])
def test_no_machine_judges_judgement_reaches_anyone(world, role):
    assert "judge-bot" not in json.dumps(_bodies(world, role))


@pytest.mark.parametrize("role", ["annotator", "co_annotator", "moderator", "lead_annotating"])
def test_the_runs_verdict_reaches_no_annotator_nor_moderator(world, role):
    bodies = _bodies(world, role)
    assert bodies, role
    assert not MACHINE_FIELDS & _keys(bodies)
    assert RUN_CONFIDENCE not in _values(bodies)
    text = json.dumps(bodies)
    assert RUN_REASON not in text and not shows_run_confidence(text)


def test_the_lead_who_does_not_judge_it_reads_the_runs_verdict(world):
    listed, one = _bodies(world, "lead")[:2]
    assert listed["results"][0]["run_invalid_reason"] == RUN_REASON
    assert (one["run_valid"], one["confidence"]) == (False, RUN_CONFIDENCE)


def test_once_round_1_is_over_the_group_reads_every_judgement(world):
    episode, group = world["episode"], world["group"]
    for role in ("co_annotator", "lead_annotating"):
        EpisodeJudgement.objects.create(
            episode=episode, annotator=world["users"][role], group=group, valid=True,
            taxonomy_version=group.study.taxonomy_version, source=Source.BROWSER,
        )  # fmt: skip
    text = json.dumps(_bodies(world, "co_annotator"))
    assert SECRET in text and "judge-bot" not in text


def test_on_an_escalated_episode_who_comments_and_who_decides(world):
    _escalate(world)
    route = url(world, "episodes/{e}/comments/")
    got = {
        r: client_of(world, r).post(route, {"text": f"from {r}"}, format="json").status_code
        for r in ROLES
    }
    assert got == dict(zip(ROLES, COMMENTS, strict=True))
    assert EpisodeComment.objects.count() == COMMENTS.count(201)
    body = {"valid": False, "invalid_reason": "other", "rationale": "r"}
    got = {}
    for r in ROLES:
        got[r] = client_of(world, r).post(url(world, "episodes/{e}/decision/"), body, format="json")
        got[r] = got[r].status_code
        EpisodeDecision.objects.all().delete()  # each role asks of the undecided episode
    assert got == dict(zip(ROLES, DECISIONS, strict=True))


def test_the_discussions_thread_and_decision_reach_an_annotator_once_round_1_is_over(world):
    """The comment and the decision are the moderator's before round 1 is over; an
    annotator reads neither (a 403) until it is, then both, with every judgement but a
    machine judge's, and never the run's verdict."""
    _escalate(world)
    moderator = client_of(world, "moderator")
    moderator.post(url(world, "episodes/{e}/comments/"), {"text": "SECRET-NOTE"}, format="json")
    decided = moderator.post(
        url(world, "episodes/{e}/decision/"),
        {"valid": True, "rationale": "SECRET-WHY"},
        format="json",
    )
    assert decided.status_code == 201
    for role in ("annotator", "co_annotator", "lead_annotating"):
        text = client_of(world, role).get(url(world, "episodes/{e}/discussion/")).content.decode()
        assert "SECRET-NOTE" in text and "SECRET-WHY" in text, role
        assert "judge-bot" not in text and RUN_REASON not in text, role
        assert not MACHINE_FIELDS & _keys(json.loads(text)), role
    # a later annotator, who never judged round 1: neither the thread nor the decision
    world["group"].annotators.add(world["users"]["other_group"])
    late = client_of(world, "other_group").get(url(world, "episodes/{e}/discussion/"))
    assert late.status_code == 403 and "SECRET" not in late.content.decode()
