"""The episode files (issue 21): the gold file (one row per episode and group, the group's
consensus as the episode measures read it, the run's own verdict for whoever may see the
machine judges), the raw file (every judgement) and the coverage ratings; each row names
the episode; the turn files' blindness (blind_for) said of episodes; the three formats read
back with pandas; the command, the page's and the API's export job."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.actions.episode_judgements import Posted, submit
from annotation.episodes import measures, report
from annotation.exports import coverage_rows, episode_gold_rows, episode_raw_rows
from annotation.models import CoverageRating, Episode, EpisodeJudgement, Job, Source
from tests.episodes.conftest import agents  # noqa: F401 (the agents study fixture)
from tests.episodes.session_world import CONFIDENCE, RUN_REASON, build
from tests.factories import HTMX

pytestmark = pytest.mark.django_db

INVALID = Posted(False, "observational_blind_spot", {})
SCOPE = Posted(True, "", {"symptom": ["scope_overreach"], "damage_severity": ["DS1"]})
FAULTY = Posted(True, "", {"symptom": ["faulty_implementation"], "damage_severity": ["DS1"]})


@pytest.fixture
def world(agents, tmp_path, alice, bob):  # noqa: F811 (the fixture imported)
    w = build(agents, tmp_path, alice, bob)
    e1, e2 = w["extracted"]
    group = w["group"]
    submit(e1, group, alice, 1, INVALID)  # both: invalid, one reason -> unanimous
    submit(e1, group, bob, 1, INVALID)
    submit(e2, group, alice, 1, SCOPE)  # they differ: round 2, where they agree
    submit(e2, group, bob, 1, FAULTY)
    submit(e2, group, alice, 2, SCOPE)
    submit(e2, group, bob, 2, SCOPE)
    submit(w["s2_episode"], group, bob, 1, FAULTY)  # round 1 under way: alice has not judged
    # alice's own episode, recorded on s1 (a person's: no run)
    w["mine"] = Episode.objects.create(
        conversation=w["s1"], created_by=alice, first_turn=2, last_turn=3, goal="missed it"
    )
    w.update(alice=alice, bob=bob)
    return w


@pytest.fixture
def eager(settings, media):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


def by_episode(rows):
    return {row["episode"]: row for row in rows}


def test_the_gold_rows_name_each_episode_and_give_the_groups_consensus(world):
    e1, e2 = world["extracted"]
    rows = by_episode(episode_gold_rows(world["study"]))
    assert set(rows) == {e1.pk, e2.pk, world["s2_episode"].pk, world["mine"].pk}
    invalid, agreed = rows[e1.pk], rows[e2.pk]
    assert {k: invalid[k] for k in ("study", "group", "run", "created_by", "conversation")} == {
        "study": "ag", "group": "E1", "run": "gpt", "created_by": None, "conversation": "s1",
    }  # fmt: skip
    assert (invalid["conversation_key"], invalid["modality"]) == (world["s1"].key, "cli")
    assert (invalid["first_turn"], invalid["last_turn"]) == (1, 2)
    assert invalid["status"] == "agreed" and invalid["method"] == "unanimous"
    assert (invalid["validity"], invalid["valid"]) == ("invalid", False)
    assert invalid["invalid_reason"] == "observational_blind_spot"
    assert invalid["deciding_round"] == 1 and invalid["labels"] is None
    assert json.loads(invalid["evidence"])[0]["quote"] == "do not touch the API"
    assert (agreed["method"], agreed["deciding_round"], agreed["valid"]) == ("discussion", 2, True)
    assert agreed["labels"] == ["DS1", "scope_overreach"]
    assert agreed["symptom_labels"] == ["scope_overreach"]
    assert agreed["damage_severity_label"] == "DS1" and agreed["cause_labels"] == []
    mine = rows[world["mine"].pk]
    assert (mine["run"], mine["created_by"], mine["goal"]) == ("", "alice", "missed it")
    # the run's own verdict, for whoever may see the machine judges (here: no reader)
    assert (invalid["run_valid"], invalid["run_invalid_reason"]) == (False, RUN_REASON)
    assert invalid["confidence"] == CONFIDENCE
    assert agreed["run_labels"] == ["scope_overreach"] and mine["confidence"] is None


def test_the_consensus_is_the_measures_reading(world):
    """The file's validity and labels are what episodes/measures.py reads from the report's
    data: one rule for the report and the export."""
    data = report.load(world["study"])
    validity = measures.consensus_validity(data["judgements"])
    gold = measures.gold_labels(data["judgements"], data["voters"])
    for pk, row in by_episode(episode_gold_rows(world["study"])).items():
        assert row["validity"] == validity.get(pk)
        expected = gold.get(pk)
        assert row["labels"] == (None if expected is None else measures_flat(expected))


def measures_flat(labels: dict) -> list[str]:
    return sorted(c for codes in labels.values() for c in codes)


def test_an_episode_of_no_episode_group_has_one_row_without_a_group(world, tmp_path):
    from annotation.models import Conversation, Turn

    lone = Conversation.objects.create(
        study=world["study"], external_id="s3", source_format="native", n_turns=1
    )
    Turn.objects.create(conversation=lone, index=1, user_text="u", reply_text="r")
    episode = Episode.objects.create(conversation=lone, first_turn=1, last_turn=1)
    row = by_episode(episode_gold_rows(world["study"]))[episode.pk]
    assert row["group"] is None and row["status"] is None and row["validity"] is None


def test_the_raw_rows_are_every_judgement_with_the_episode_named(world):
    e1, e2 = world["extracted"]
    rows = list(episode_raw_rows(world["study"]))
    assert len(rows) == 7
    assert [r["round"] for r in rows if r["episode"] == e2.pk] == [1, 1, 2, 2]
    first = rows[0]
    assert {k: first[k] for k in ("group", "run", "conversation", "first_turn", "last_turn")} == {
        "group": "E1", "run": "gpt", "conversation": "s1", "first_turn": 1, "last_turn": 2,
    }  # fmt: skip
    assert (first["annotator"], first["valid"], first["labels"]) == ("alice", False, None)
    assert first["invalid_reason"] == "observational_blind_spot"
    assert (first["source"], first["is_current"]) == (Source.BROWSER, True)
    assert first["taxonomy_version"].startswith("agent-misalignment v")
    bob_r1 = next(r for r in rows if r["episode"] == e2.pk and r["annotator"] == "bob")
    assert bob_r1["labels"] == ["DS1", "faulty_implementation"]
    assert bob_r1["symptom_labels"] == ["faulty_implementation"]
    assert bob_r1["damage_severity_label"] == "DS1"
    assert [r["round"] for r in episode_raw_rows(world["study"], round=2)] == [2, 2]


def test_blind_for_an_annotator_the_round_1_under_way_stays_theirs(world):
    alice, bob, s2 = world["alice"], world["bob"], world["s2_episode"]
    # alice has not judged s2's episode: bob's round-1 judgement of it is not hers to read
    raw = list(episode_raw_rows(world["study"], blind_for=alice))
    assert [r for r in raw if r["episode"] == s2.pk] == []
    assert len(raw) == 6
    # bob reads his own
    assert [r["annotator"] for r in episode_raw_rows(world["study"], blind_for=bob)
            if r["episode"] == s2.pk] == ["bob"]  # fmt: skip
    gold = by_episode(episode_gold_rows(world["study"], blind_for=alice))
    assert gold[s2.pk]["validity"] is None and gold[s2.pk]["labels"] is None
    assert gold[s2.pk]["status"] == "open"
    assert by_episode(episode_gold_rows(world["study"]))[s2.pk]["validity"] is not None
    # the agreed episodes are no longer blind
    assert gold[world["extracted"][1].pk]["labels"] == ["DS1", "scope_overreach"]


def test_a_persons_episode_stays_out_until_the_reader_rated_the_session(world):
    bob, mine = world["bob"], world["mine"]
    assert mine.pk not in by_episode(episode_gold_rows(world["study"], blind_for=bob))
    CoverageRating.objects.create(
        conversation=world["s1"], annotator=bob, group=world["group"], rating=1
    )
    assert mine.pk in by_episode(episode_gold_rows(world["study"], blind_for=bob))


def test_the_runs_verdict_goes_only_where_the_judges_data_goes(world):
    e1 = world["extracted"][0]
    for reader in (world["alice"], world["moe"]):  # an annotator, a moderator
        row = by_episode(episode_gold_rows(world["study"], blind_for=reader))[e1.pk]
        assert [row[k] for k in ("run_valid", "run_invalid_reason", "run_labels")] == [None] * 3
        assert row["confidence"] is None, reader.username
    row = by_episode(episode_gold_rows(world["study"], blind_for=world["lena"]))[e1.pk]
    assert (row["run_valid"], row["confidence"]) == (False, CONFIDENCE)  # a lead


def test_coverage_rows_and_their_blindness(world):
    alice, bob, group = world["alice"], world["bob"], world["group"]
    CoverageRating.objects.create(conversation=world["s1"], annotator=alice, group=group, rating=2)
    CoverageRating.objects.create(conversation=world["s1"], annotator=bob, group=group, rating=1)
    CoverageRating.objects.create(conversation=world["s2"], annotator=bob, group=group, rating=0)
    rows = list(coverage_rows(world["study"]))
    assert [(r["conversation"], r["annotator"], r["rating"]) for r in rows] == [
        ("s1", "alice", 2), ("s1", "bob", 1), ("s2", "bob", 0),
    ]  # fmt: skip
    assert rows[0]["group"] == "E1" and rows[0]["modality"] == "cli" and rows[0]["is_current"]
    # alice has not rated s2: bob's rating of it is not hers to read yet
    blind = list(coverage_rows(world["study"], blind_for=alice))
    assert [(r["conversation"], r["annotator"]) for r in blind] == [("s1", "alice"), ("s1", "bob")]


def test_the_command_writes_the_three_formats(world, tmp_path):
    out = {}
    for fmt in ("csv", "jsonl", "parquet"):
        path = tmp_path / f"gold.{fmt}"
        call_command("export_gold", "ag", "--format", fmt, "--output", str(path), "--unit",
                     "episode")  # fmt: skip
        out[fmt] = path
    frame = pd.read_parquet(out["parquet"])
    assert len(frame) == 4
    assert str(frame["episode"].dtype) == "Int64" and str(frame["deciding_round"].dtype) == "Int64"
    assert frame["confidence"].dtype == "float64"
    agreed = frame[frame["episode"] == world["extracted"][1].pk].iloc[0]
    assert list(agreed["labels"]) == ["DS1", "scope_overreach"] and agreed["valid"]
    csv = pd.read_csv(out["csv"], dtype={"deciding_round": "Int64"})
    assert list(csv["episode"]) == list(frame["episode"])
    assert csv.loc[csv["episode"] == agreed["episode"], "labels"].item() == "DS1|scope_overreach"
    lines = [json.loads(line) for line in out["jsonl"].read_text().splitlines()]
    assert [row["episode"] for row in lines] == list(frame["episode"])
    raw = tmp_path / "raw.csv"
    call_command("export_gold", "ag", "--format", "csv", "--output", str(raw), "--unit",
                 "episode", "--raw")  # fmt: skip
    assert len(pd.read_csv(raw)) == 7
    ratings = tmp_path / "coverage.jsonl"
    CoverageRating.objects.create(
        conversation=world["s1"], annotator=world["bob"], group=world["group"], rating=1
    )
    call_command("export_gold", "ag", "--format", "jsonl", "--output", str(ratings), "--unit",
                 "coverage", "--raw")  # fmt: skip
    assert json.loads(ratings.read_text())["rating"] == 1
    plain = tmp_path / "coverage.csv"  # no gold file of them: the same rows, raw or not
    call_command("export_gold", "ag", "--format", "csv", "--output", str(plain), "--unit",
                 "coverage")  # fmt: skip
    assert list(pd.read_csv(plain)["rating"]) == [1]


def test_the_export_job_writes_the_episode_file_blind_for_whoever_starts_it(
    world, client, eager, media, django_capture_on_commit_callbacks
):
    client.force_login(world["lena"])
    url = reverse("job_export", args=["ag"])
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url, {"format": "jsonl", "unit": "episode"}).status_code == 302
    job = Job.objects.get()
    assert job.result_file == f"exports/{job.pk}/ag-gold-episodes.jsonl"
    assert job.result["rows"] == 4 and job.result["unit"] == "episode"
    rows = [json.loads(line) for line in (media / job.result_file).read_text().splitlines()]
    assert {r["episode"] for r in rows} == set(Episode.objects.values_list("pk", flat=True))
    refused = client.post(url, {"format": "csv", "unit": "sessions"}, **HTMX)
    assert refused.status_code == 422 and Job.objects.count() == 1
    assert "unit" in refused.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"format": "csv", "unit": "coverage"})
    ratings = Job.objects.latest("pk")
    assert ratings.params["raw"] is True
    assert ratings.result_file == f"exports/{ratings.pk}/ag-raw-coverage.csv"


def test_a_machine_judges_rows_go_only_where_the_judges_data_goes(world):
    from tests.factories import make_user

    bot = make_user("llm-bot")
    world["group"].judges.add(bot)
    e2 = world["extracted"][1]
    EpisodeJudgement.objects.create(
        episode=e2, annotator=bot, group=world["group"], valid=True,
        labels={"symptom": ["misread_project"]}, source=Source.JUDGE,
        taxonomy_version=world["study"].taxonomy_version,
    )  # fmt: skip

    def annotators(reader):
        return {r["annotator"] for r in episode_raw_rows(world["study"], blind_for=reader)}

    assert "llm-bot" in annotators(None) and "llm-bot" in annotators(world["lena"])
    assert "llm-bot" not in annotators(world["moe"]) | annotators(world["alice"])
    # it never votes: the consensus is the group's annotators'
    row = by_episode(episode_gold_rows(world["study"]))[e2.pk]
    assert row["labels"] == ["DS1", "scope_overreach"]


@pytest.mark.skipif(
    not hasattr(measures, "MODERATOR"),
    reason="the measures read a moderator's decision once epmod's EpisodeDecision is merged",
)
def test_a_moderators_decision_in_the_measures_data_is_the_consensus(world, monkeypatch):
    """The consensus is read from report.load's data through measures.py: a moderator's
    decision that data holds (a judgement with method "moderator", in the round after the
    escalated one) is the episode's consensus in the file, method "moderator"."""
    e2 = world["extracted"][1]
    load = report.load

    def with_decision(study):
        data = load(study)
        data["judgements"].append(
            {"episode": e2.pk, "group": "E1", "annotator": "moe", "round": 3, "valid": False,
             "invalid_reason": "other", "labels": {}, "method": "moderator"}
        )  # fmt: skip
        return data

    monkeypatch.setattr(report, "load", with_decision)
    row = by_episode(episode_gold_rows(world["study"]))[e2.pk]
    assert (row["method"], row["status"], row["deciding_round"]) == ("moderator", "agreed", 3)
    assert (row["validity"], row["invalid_reason"]) == ("invalid", "other")
    assert row["labels"] is None
