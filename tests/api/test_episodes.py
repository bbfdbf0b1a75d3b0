"""Episodes in the API (issue 21): the list (paginated, filtered, the pages' visibility),
one episode with its evidence, its judgements under the card's blindness, and a judgement
saved by the card's rules, the server deciding the round."""

from __future__ import annotations

import pytest

from annotation.models import (
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EpisodeSeen,
    Job,
    JobKind,
    JobStatus,
)
from tests.episodes.conftest import agents  # noqa: F401 (the agents study fixture)
from tests.episodes.session_world import CONFIDENCE, RUN_REASON, build
from tests.factories import token_client

pytestmark = pytest.mark.django_db

S = "/api/studies/ag"
VALID = {"valid": True, "labels": {"symptom": ["scope_overreach"], "damage_severity": ["DS1"]}}
INVALID = {"valid": False, "invalid_reason": "other"}


@pytest.fixture
def world(agents, tmp_path, alice, bob):  # noqa: F811 (the fixture imported)
    w = build(agents, tmp_path, alice, bob)
    w.update(alice=alice, bob=bob)
    return w


def get(user, path, **params):
    return token_client(user).get(f"{S}/{path}", params)


def post(user, path, body):
    return token_client(user).post(f"{S}/{path}", body, format="json")


def test_the_list_gives_each_reader_the_episodes_the_pages_give(world):
    e1, e2 = world["extracted"]
    everything = [e1.pk, e2.pk, world["s2_episode"].pk]
    for reader in ("alice", "moe", "lena"):  # an annotator, the moderator, a lead
        response = get(world[reader], "episodes/")
        assert response.status_code == 200
        assert [r["id"] for r in response.json()["results"]] == everything, reader
    assert get(world["carol"], "episodes/").json()["results"] == []  # a turn group's
    row = get(world["alice"], "episodes/").json()["results"][0]
    assert {k: row[k] for k in ("conversation", "run", "created_by", "first_turn", "last_turn")} == {
        "conversation": "s1", "run": "gpt", "created_by": None, "first_turn": 1, "last_turn": 2,
    }  # fmt: skip
    assert row["conversation_key"] == world["s1"].key and row["goal"] == "keep the API"


def test_the_list_filters_and_pages(world):
    lena = world["lena"]
    s2 = world["s2_episode"].pk
    assert [r["id"] for r in get(lena, "episodes/", conversation="s2").json()["results"]] == [s2]
    assert get(lena, "episodes/", run="nope").json()["count"] == 0
    assert get(lena, "episodes/", run="gpt").json()["count"] == 3
    assert [r["id"] for r in get(lena, "episodes/", group="T1").json()["results"]] == [s2]
    assert get(lena, "episodes/", page=2).status_code == 404
    assert get(lena, "episodes/", page="x").status_code == 400
    assert get(lena, "episodes/", run="").status_code == 400


def test_a_running_imports_sessions_are_in_no_list(world):
    job = Job.objects.create(study=world["study"], kind=JobKind.IMPORT, status=JobStatus.RUNNING)
    Conversation.objects.filter(pk=world["s2"].pk).update(import_job=job)
    ids = [r["id"] for r in get(world["lena"], "episodes/").json()["results"]]
    assert world["s2_episode"].pk not in ids and len(ids) == 2
    assert get(world["lena"], f"episodes/{world['s2_episode'].pk}/").status_code == 404


def test_another_persons_episode_is_listed_once_the_reader_rated_coverage(world):
    mine = Episode.objects.create(
        conversation=world["s1"], created_by=world["bob"], first_turn=2, last_turn=2, goal="b"
    )
    ids = lambda: [r["id"] for r in get(world["alice"], "episodes/").json()["results"]]  # noqa: E731
    assert mine.pk not in ids()
    assert get(world["alice"], f"episodes/{mine.pk}/").status_code == 404
    CoverageRating.objects.create(
        conversation=world["s1"], annotator=world["alice"], group=world["group"], rating=1
    )
    assert mine.pk in ids()
    row = get(world["alice"], f"episodes/{mine.pk}/").json()
    assert (row["run"], row["created_by"]) == ("", "bob")


def test_one_episode_with_its_evidence_marks_it_seen_for_an_annotator(world):
    e1 = world["extracted"][0]
    response = get(world["alice"], f"episodes/{e1.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert (body["group"], body["status"], body["round"]) == ("E1", "open", 1)
    quote = body["evidence"][0]
    assert (quote["turn"], quote["part"], quote["quote"]) == (1, "user", "do not touch the API")
    assert quote["end"] - quote["start"] == len("do not touch the API")
    assert EpisodeSeen.objects.filter(episode=e1, annotator=world["alice"]).exists()
    get(world["moe"], f"episodes/{e1.pk}/")  # a moderator reads: not seen by them
    assert not EpisodeSeen.objects.filter(annotator=world["moe"]).exists()
    assert get(world["carol"], f"episodes/{e1.pk}/").status_code == 404


def test_the_runs_verdict_only_for_a_lead(world):
    e1 = world["extracted"][0]
    secrets = {"run_valid", "run_invalid_reason", "run_labels", "confidence"}
    for reader in ("alice", "bob", "moe"):
        listed = get(world[reader], "episodes/").json()["results"]
        one = get(world[reader], f"episodes/{e1.pk}/").json()
        assert not secrets & (set(listed[0]) | set(one)), reader
        assert str(CONFIDENCE) not in str(listed) + str(one) and RUN_REASON not in str(one)
    one = get(world["lena"], f"episodes/{e1.pk}/").json()
    assert (one["run_valid"], one["run_invalid_reason"]) == (False, RUN_REASON)
    assert one["confidence"] == CONFIDENCE
    assert get(world["lena"], "episodes/").json()["results"][1]["run_labels"] == {
        "symptom": ["scope_overreach"]
    }


def test_a_judgement_goes_through_the_cards_rounds(world):
    alice, bob, e1 = world["alice"], world["bob"], world["extracted"][0]
    path = f"episodes/{e1.pk}/judgements/"
    saved = post(alice, path, VALID)
    assert saved.status_code == 200, saved.content
    assert saved.json()["status"] == "open" and saved.json()["round"] == 1
    assert [j["annotator"] for j in saved.json()["judgements"]] == ["alice"]
    stored = EpisodeJudgement.objects.get(annotator=alice)
    assert stored.labels == VALID["labels"] and stored.round == 1 and stored.valid
    # blind: bob sees only his own (none) while round 1 is under way
    assert get(bob, path).json()["judgements"] == []
    assert [j["annotator"] for j in get(world["moe"], path).json()["judgements"]] == ["alice"]
    # a different judgement from bob: disputed, round 2 opens, both read both
    after = post(bob, path, INVALID).json()
    assert (after["status"], after["round"]) == ("disputed", 2)
    assert sorted(j["annotator"] for j in after["judgements"]) == ["alice", "bob"]
    assert sorted(j["annotator"] for j in get(alice, path).json()["judgements"]) == ["alice", "bob"]
    # round 1 is over: the server refuses it, and takes round 2
    late = post(alice, path, INVALID)
    assert late.status_code == 409 and "round 2" in late.json()["detail"]
    post(alice, path, {**INVALID, "round": 2})
    done = post(bob, path, {**INVALID, "round": 2}).json()
    assert (done["status"], done["method"], done["round"]) == ("agreed", "discussion", None)


def test_a_bad_judgement_is_a_400_naming_the_field(world):
    alice, e1 = world["alice"], world["extracted"][0]
    path = f"episodes/{e1.pk}/judgements/"
    cases = [
        ({"valid": False}, "invalid_reason"),
        ({"valid": False, "invalid_reason": "bored"}, "invalid_reason"),
        ({"valid": True, "invalid_reason": "other"}, "invalid_reason"),
        ({"valid": True, "labels": {"symptom": ["nope"]}}, "labels"),
        ({"valid": True, "labels": {"cause": ["instruction_following_failure",
          "underspecified_instruction", "other_indeterminate"]}}, "labels"),
        ({"valid": False, "invalid_reason": "other", "labels": {"symptom": ["scope_overreach"]}},
         "labels"),
        ({"valid": "yes"}, "valid"),
        ({"valid": True, "extra": 1}, "extra"),
    ]  # fmt: skip
    for body, field in cases:
        response = post(alice, path, body)
        assert response.status_code == 400, body
        assert field in response.json(), (body, response.json())
    assert not EpisodeJudgement.objects.exists()


def test_only_the_groups_annotators_judge(world):
    e1 = world["extracted"][0]
    path = f"episodes/{e1.pk}/judgements/"
    assert post(world["moe"], path, VALID).status_code == 403
    assert post(world["lena"], path, VALID).status_code == 403
    assert post(world["carol"], path, VALID).status_code == 404
    assert not EpisodeJudgement.objects.exists()


def test_the_export_job_takes_the_unit(world, settings, media):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queued only: the file is tests/exports'
    lena = world["lena"]
    bad = post(lena, "exports/", {"format": "csv", "unit": "sessions"})
    assert bad.status_code == 400 and "unit" in bad.json()
    started = post(lena, "exports/", {"format": "csv", "unit": "episode", "raw": True})
    assert started.status_code == 202
    job = Job.objects.get(pk=started.json()["job"])
    assert (job.params["unit"], job.params["raw"]) == ("episode", True)
    ratings = post(lena, "exports/", {"format": "jsonl", "unit": "coverage"})
    assert Job.objects.get(pk=ratings.json()["job"]).params["raw"] is True  # their one file
    assert post(world["alice"], "exports/", {"format": "csv", "unit": "episode"}).status_code == 404
