"""The moderation and the discussion of episodes in the access matrix (issue 21): who gets the
moderation queue's Episodes tab, who may decide an escalated episode (its moderator, a lead
who does not annotate it; never one of its annotators, whatever other role they hold) and
who may write in its thread; what the moderator reads (every judgement, never the run's
verdict, a machine judge's judgement or the confidence), and what an annotator never reads
(the thread, the decision) before they judged round 1."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import EpisodeComment, EpisodeDecision, EpisodeJudgement, Source

from . import test_episode_access as matrix
from .test_episode_access import ROLES, RUN_REASON, client_of, shows_run_confidence

world = matrix.world  # the episode matrix's world: its roles, its episode, its run's verdict

pytestmark = pytest.mark.django_db


def _judge(world, role: str, round: int, valid: bool) -> None:
    episode, group = world["episode"], world["group"]
    EpisodeJudgement.objects.filter(
        episode=episode, annotator=world["users"][role], round=round
    ).delete()
    EpisodeJudgement.objects.create(
        episode=episode, annotator=world["users"][role], group=group, round=round, valid=valid,
        invalid_reason="" if valid else "other", taxonomy_version=group.study.taxonomy_version,
        source=Source.BROWSER,
    )  # fmt: skip


def _escalate(world) -> None:
    """The three annotators differ in round 1 and in the one discussion round."""
    for r in (1, 2):
        _judge(world, "annotator", r, False)
        _judge(world, "co_annotator", r, True)
        _judge(world, "lead_annotating", r, True)


def _post(world, role: str, name: str, data: dict):
    url = reverse(name, args=["ep", world["episode"].pk]) + f"?group={world['group'].pk}"
    return client_of(world, role).post(url, data)


def test_each_role_gets_the_episodes_moderation_tab_its_role_gives_it(world):
    _escalate(world)
    url = reverse("moderate_episodes", args=["ep"])
    got = {r: client_of(world, r).get(url).status_code for r in ROLES}
    assert got == {"anonymous": 302, "annotator": 403, "co_annotator": 403, "other_group": 403,
                   "moderator": 200, "lead": 200, "lead_annotating": 200,
                   "other_study": 404}  # fmt: skip
    # a lead who annotates the group is not shown its episodes to decide
    for role, listed in (("moderator", True), ("lead", True), ("lead_annotating", False)):
        body = client_of(world, role).get(url).content.decode()
        assert (f'data-episode-id="{world["episode"].pk}"' in body) is listed, role
        assert RUN_REASON not in body and not shows_run_confidence(body), role


@pytest.mark.parametrize(
    "role, status",
    [("anonymous", 302), ("annotator", 403), ("co_annotator", 403), ("other_group", 404),
     ("lead_annotating", 403), ("other_study", 404), ("moderator", 302), ("lead", 302)],
)  # fmt: skip
def test_only_its_moderator_or_a_lead_who_does_not_annotate_it_decides(world, role, status):
    _escalate(world)
    response = _post(world, role, "episode_decide", {"valid": "1", "rationale": "r"})
    assert response.status_code == status
    decided = EpisodeDecision.objects.exists()
    assert decided is (role in ("moderator", "lead"))
    if role == "anonymous":
        assert "/login" in response["Location"] or "login" in response["Location"]


def test_the_moderators_card_shows_every_judgement_and_nothing_of_the_run_or_the_judge(world):
    _escalate(world)
    for role in ("moderator", "lead"):
        url = reverse("episode_card", args=["ep", world["episode"].pk])
        body = client_of(world, role).get(f"{url}?group={world['group'].pk}").content.decode()
        assert 'id="episode-decide"' in body
        assert body.count("<tr data-annotator=") == 6  # 3 annotators x 2 rounds
        assert "judge-bot" not in body and not shows_run_confidence(body)
        shown = re.sub(r"<form.*?</form>", "", body, flags=re.S)  # the reasons to choose
        assert RUN_REASON not in shown and "invisible agent action" not in shown.lower()


def test_the_thread_and_the_decision_stay_hidden_from_an_annotator_who_has_not_judged(world):
    episode, group = world["episode"], world["group"]
    _judge(world, "co_annotator", 1, True)
    _judge(world, "lead_annotating", 1, False)  # round 1 over: a discussion round
    EpisodeJudgement.objects.filter(
        episode=episode, annotator=world["users"]["annotator"]
    ).delete()  # the annotator's judgement withdrawn: round 1 open again for them
    url = reverse("episode_card", args=["ep", episode.pk])
    EpisodeComment.objects.create(
        episode=episode, group=group, author=world["users"]["co_annotator"], round=2,
        text="SECRET-COMMENT",
    )  # fmt: skip
    body = client_of(world, "annotator").get(url).content.decode()
    assert "SECRET-COMMENT" not in body and 'id="episode-thread"' not in body
    response = _post(world, "annotator", "episode_comment", {"text": "me too"})
    assert response.status_code in (409,) and "SECRET-COMMENT" not in response.content.decode()
    # another group's annotator and another study's lead: no such episode
    for role in ("other_group", "other_study"):
        assert _post(world, role, "episode_comment", {"text": "hi"}).status_code == 404
    assert EpisodeComment.objects.count() == 1
