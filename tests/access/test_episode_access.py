"""The episode card and its partial in the access matrix (issue 21 point 2): each role's
status, and round-1 blindness on episodes (access.get_episode_for_member,
access.episode_judgements): whoever judges an episode sees nobody else's judgement of it
before round 1 is over, whatever other role they hold (a lead who annotates); the group's
moderator and a lead who does not annotate it may; a machine judge's judgement and the
run's own verdict reach nobody here."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import (
    Conversation,
    Episode,
    EpisodeJudgement,
    ExtractionRun,
    Role,
    Source,
    Turn,
    Unit,
)
from tests.factories import HTMX, make_group, make_study, make_user

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator", "co_annotator", "other_group", "moderator", "lead",
         "lead_annotating", "other_study")  # fmt: skip
# (url name, expected status for each role), the page and its htmx partial alike
PAGES = [
    ("episode_card", (302, 200, 200, 404, 200, 200, 200, 404)),
    ("episode_context", (302, 200, 200, 404, 200, 200, 200, 404)),
]
SECRET_REASON = "Normative prior bias"  # alice's round-1 reason, as the judgements show it
RUN_REASON = "observational_blind_spot.invisible_agent_action"  # the run's own verdict
RUN_CONFIDENCE = 0.7


def shows_run_confidence(text: str) -> bool:
    """Whether the run's confidence is written in a page or a body as a number of its own:
    not inside a longer one (a timestamp's microseconds, "20.703351", hold "0.7")."""
    return re.search(r"(?<![\d.])0\.70*(?![\d])", text) is not None


@pytest.fixture
def world(db):
    study = make_study("ep", taxonomy="agent-misalignment")
    users = {r: make_user(r) for r in ROLES if r != "anonymous"}
    group = make_group(
        study, "E1", annotators=[users["annotator"], users["co_annotator"]],
        moderator=users["moderator"],
    )  # fmt: skip
    group.annotators.add(users["lead_annotating"])
    study.add_member(users["lead_annotating"], Role.LEAD)
    study.add_member(users["lead"], Role.LEAD)
    other = make_group(study, "E2", annotators=[users["other_group"]])
    judge = make_user("judge-bot")
    group.judges.add(judge)
    Group = type(group)
    Group.objects.filter(pk__in=[group.pk, other.pk]).update(unit=Unit.EPISODE)
    make_study("elsewhere").add_member(users["other_study"], Role.LEAD)
    conversation = Conversation.objects.create(
        study=study, external_id="s1", source_format="native", n_turns=3
    )
    for i in (1, 2, 3):
        Turn.objects.create(conversation=conversation, index=i, user_text=f"u{i}", reply_text="r")
    Conversation.objects.filter(pk=conversation.pk).assign(group)
    run = ExtractionRun.objects.create(study=study, name="gpt")
    episode = Episode.objects.create(
        conversation=conversation, run=run, first_turn=2, last_turn=2, goal="g",
        confidence=RUN_CONFIDENCE, run_valid=False, run_invalid_reason=RUN_REASON,
    )  # fmt: skip
    version = study.taxonomy_version
    EpisodeJudgement.objects.create(
        episode=episode, annotator=users["annotator"], group=group, valid=False,
        invalid_reason="normative_prior_bias", taxonomy_version=version, source=Source.BROWSER,
    )  # fmt: skip
    EpisodeJudgement.objects.create(
        episode=episode, annotator=judge, group=group, valid=False, invalid_reason="other",
        taxonomy_version=version, source=Source.JUDGE,
    )  # fmt: skip
    return {"users": users, "episode": episode, "group": group}


def client_of(world, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


@pytest.mark.parametrize("name, statuses", PAGES, ids=[p[0] for p in PAGES])
def test_each_role_gets_the_episode_pages_its_role_gives_it(world, name, statuses):
    url = reverse(name, args=["ep", world["episode"].pk])
    expected = dict(zip(ROLES, statuses, strict=True))
    for headers in ({}, HTMX):
        got = {r: client_of(world, r).get(url, **headers).status_code for r in ROLES}
        assert got == expected, (name, headers)


def _bodies(world, role: str) -> str:
    client = client_of(world, role)
    out = []
    for name, _ in PAGES:
        url = reverse(name, args=["ep", world["episode"].pk])
        out += [client.get(url).content.decode(), client.get(url, **HTMX).content.decode()]
    return "\n".join(out)


def _judgements_part(body: str) -> str:
    """What the pages show outside the annotator's own form (where every reason is an
    option to choose)."""
    return re.sub(r'<form class="episode-questions".*?</form>', "", body, flags=re.S)


@pytest.mark.parametrize("role", ["co_annotator", "lead_annotating"])
def test_who_judges_the_episode_sees_no_one_elses_round_1_judgement(world, role):
    body = _judgements_part(_bodies(world, role))
    assert 'data-annotator="annotator"' not in body and SECRET_REASON not in body


@pytest.mark.parametrize("role", ["moderator", "lead"])
def test_a_moderator_or_lead_who_does_not_judge_it_may_read_it(world, role):
    body = _judgements_part(_bodies(world, role))
    assert 'data-annotator="annotator"' in body and SECRET_REASON in body
    assert "episode-questions" not in body  # no form: they read


def test_the_author_finds_their_own_judgement_in_their_form(world):
    body = _bodies(world, "annotator")
    assert re.search(r'value="normative_prior_bias"[^>]*checked', body)
    assert 'data-annotator="' not in body  # nobody's in a table before round 1 is over


@pytest.mark.parametrize("role", ROLES[1:])
def test_no_judge_and_no_runs_verdict_reaches_anyone_here(world, role):
    body = _bodies(world, role)
    assert "judge-bot" not in body
    shown = _judgements_part(body)
    assert RUN_REASON not in shown and "invisible agent action" not in shown


def test_once_round_1_is_over_the_group_sees_every_judgement(world):
    episode, group = world["episode"], world["group"]
    for role in ("co_annotator", "lead_annotating"):
        EpisodeJudgement.objects.create(
            episode=episode, annotator=world["users"][role], group=group, valid=True,
            taxonomy_version=group.study.taxonomy_version, source=Source.BROWSER,
        )  # fmt: skip
    body = _judgements_part(_bodies(world, "co_annotator"))
    assert 'data-annotator="annotator"' in body and SECRET_REASON in body
    assert "judge-bot" not in body
