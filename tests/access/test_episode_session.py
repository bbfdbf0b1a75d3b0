"""Blindness on the session page of an episode group (access.session_episodes): an
annotator never reads an extraction run's own verdict, labels or confidence, nor another
annotator's judgements or coverage rating; the episodes the group's other annotators
recorded show only once the annotator has rated the session's coverage, and those of
someone outside the group (another group sharing the session, a lead) never. Every answer
of the page (the page, an opened episode, the quotes box, the sessions list, a message's
full text) is read whole for the secrets."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.access import SESSION_EPISODE_FIELDS, session_episodes
from annotation.models import CoverageRating, Episode, EpisodeJudgement, Source
from tests.episodes import session_world
from tests.episodes.conftest import agents  # noqa: F401  (the fixture)
from tests.episodes.session_world import CONFIDENCE, RUN_LABEL, RUN_REASON, session_url
from tests.factories import HTMX

pytestmark = pytest.mark.django_db

BOB_GOAL = "bob-secret-goal"
CAROL_GOAL = "carol-secret-goal"
LEAD_GOAL = "lena-secret-goal"
BOB_REASON = "observational_blind_spot.invisible_agent_action"


@pytest.fixture
def world(agents, tmp_path, alice, bob):  # noqa: F811
    world = session_world.build(agents, tmp_path, alice, bob)
    s1, s2 = world["s1"], world["s2"]
    world["bob_episode"] = Episode.objects.create(
        conversation=s1, created_by=bob, first_turn=2, last_turn=3, goal=BOB_GOAL
    )
    world["carol_episode"] = Episode.objects.create(
        conversation=s2, created_by=world["carol"], first_turn=1, last_turn=1, goal=CAROL_GOAL
    )
    world["lead_episode"] = Episode.objects.create(
        conversation=s1, created_by=world["lena"], first_turn=1, last_turn=1, goal=LEAD_GOAL
    )
    for e in world["extracted"]:  # bob judged both and rated: none of it is alice's to read
        EpisodeJudgement.objects.create(
            episode=e, annotator=bob, group=world["group"], valid=False,
            invalid_reason=BOB_REASON, taxonomy_version=agents.taxonomy_version,
            source=Source.BROWSER,
        )  # fmt: skip
    CoverageRating.objects.create(
        conversation=s1, annotator=bob, group=world["group"], rating=0, source=Source.BROWSER
    )
    return world


def _answers(client, world) -> dict[str, str]:
    """Every answer of the page alice can ask for on s1, by name."""
    out = {"page": client.get(session_url(world)).content.decode()}
    for e in world["extracted"]:
        url = session_url(world, None, "episode_session_episode", e.pk)
        out[f"episode {e.pk}"] = client.get(url, **HTMX).content.decode()
    for name in ("bob_episode", "lead_episode"):  # asked for by id: the page's rule holds
        url = session_url(world, None, "episode_session_episode", world[name].pk)
        out[name] = client.get(url, **HTMX).content.decode()
    out["sessions"] = client.get(reverse("episode_sessions", args=["ag"])).content.decode()
    quote = {"quote": "do not touch the API", "turn": "1", "part": "user"}
    out["quotes"] = client.post(session_url(world, None, "episode_session_quote"), quote).content
    out["quotes"] = out["quotes"].decode()
    out["text"] = client.get(session_url(world, None, "episode_session_text", 1, "reply"))
    out["text"] = out["text"].content.decode()
    return out


SECRETS = {
    "the run's confidence": str(CONFIDENCE),
    "the run's invalid reason": RUN_REASON,
    "the run's label": RUN_LABEL,
    "bob's invalid reason": "invisible_agent_action",
    "carol's episode": CAROL_GOAL,
    "the lead's episode": LEAD_GOAL,
}


def _leaks(answers: dict[str, str], secrets: dict[str, str]) -> list[tuple[str, str]]:
    return [
        (name, what) for name, body in answers.items() for what, s in secrets.items() if s in body
    ]


def test_nothing_of_the_run_or_the_others_reaches_the_annotator(client, world, alice):
    client.force_login(alice)
    answers = _answers(client, world)
    assert _leaks(answers, SECRETS | {"bob's episode": BOB_GOAL}) == []
    page = answers["page"]
    assert "judged" not in page.replace("Judged by me", "")  # bob's judgements mark nothing
    assert "Your rating" not in page and "<fieldset disabled>" in page  # nor his rating
    assert 'id="their-episodes"' not in page


def test_the_others_episodes_show_once_the_annotator_rated_coverage(client, world, alice):
    client.force_login(alice)
    bob_episode = world["bob_episode"]
    opened = session_url(world, None, "episode_session_episode", bob_episode.pk)
    assert client.get(opened, **HTMX).status_code == 404
    for e in world["extracted"]:
        client.get(session_url(world, None, "episode_session_episode", e.pk), **HTMX)
    assert client.post(session_url(world, None, "episode_session_coverage"), {"coverage": "2"})

    answers = _answers(client, world)
    assert _leaks(answers, SECRETS) == []  # the run's, bob's verdicts, other groups': still not
    assert (
        BOB_GOAL in answers["page"]
        and BOB_GOAL in answers["bob_episode"]
        and 'id="their-episodes"' in answers["page"]
    )
    assert "by bob" in answers["page"]
    assert client.get(opened, **HTMX).status_code == 200


def test_the_rule_itself(world, alice, bob):
    group, s1, s2 = world["group"], world["s1"], world["s2"]
    e1, e2 = world["extracted"]
    assert set(session_episodes(alice, group, s1)) == {e1, e2}
    assert set(session_episodes(bob, group, s1)) == {e1, e2, world["bob_episode"]}
    CoverageRating.objects.create(conversation=s1, annotator=alice, group=group, rating=1)
    assert set(session_episodes(alice, group, s1)) == {e1, e2, world["bob_episode"]}
    # a rating of another session opens nothing here, and carol's s2 episode stays hers
    CoverageRating.objects.create(conversation=s2, annotator=alice, group=group, rating=1)
    assert set(session_episodes(alice, group, s2)) == {world["s2_episode"]}
    # an old rating is not a rating
    CoverageRating.objects.filter(annotator=alice, conversation=s1).update(is_current=False)
    assert world["bob_episode"] not in set(session_episodes(alice, group, s1))
    # someone who does not annotate the group sees nothing through it
    assert not session_episodes(world["lena"], group, s1).exists()
    assert not session_episodes(world["moe"], group, s1).exists()


def test_the_page_can_read_no_field_of_the_runs_verdict(world, alice):
    (first, *_) = session_episodes(alice, world["group"], world["s1"])
    deferred = first.get_deferred_fields()
    assert {"confidence", "run_valid", "run_invalid_reason", "run_labels"} <= deferred
    assert "goal" in SESSION_EPISODE_FIELDS and "goal" not in deferred
