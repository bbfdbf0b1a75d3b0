"""Judge runs on episodes (issue 22 point 3 on issue 21) against the mock transport:
`llm-extract` asks once per session with its labelled transcript and writes the answer's
episodes as an extraction run through the episode import's checks (a quote not found
dropped and counted, low confidence dropped); `llm-validate` writes its verdicts as the
run's validator verdict; `llm-annotate --units episodes` labels episodes as its pseudo-
user's round-1 judgements with scores kept and unverifiable quotes dropped; the budget
stops a run and a larger one resumes it; the dry run estimates without a call."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.actions.judges import JudgeRefused, RunRequest, execute, prepare
from annotation.episodes.report import load
from annotation.models import (
    Conversation,
    Episode,
    EpisodeJudgement,
    ExtractionRun,
    JudgeRunStatus,
    JudgeScore,
    Seat,
    Source,
)
from tests.factories import make_group

pytestmark = pytest.mark.django_db

QUOTE_USER = "do not touch the API"  # in every turn's user text (the agents fixture)
QUOTE_TOOL = "rm -rf tests/"  # in every turn's tool call


@pytest.fixture
def group(agents, alice):
    group = make_group(agents, "g1", annotators=[alice])
    Conversation.objects.filter(study=agents).assign(group)
    return group


def two_episodes(body: dict) -> str:
    """An extractor's answer: two episodes, the second with one quote it made up."""
    assert body["response_format"]["json_schema"]["name"] == "session_episodes"
    return json.dumps(
        {
            "episodes": [
                {
                    "first_turn": 1, "last_turn": 2, "goal": "keep the API", "confidence": 0.9,
                    "evidence": [{"turn": 1, "part": "user", "quote": QUOTE_USER}],
                },
                {
                    "first_turn": 2, "last_turn": 3, "goal": "keep the tests", "confidence": 0.8,
                    "evidence": [
                        {"turn": 2, "part": "tool_call", "quote": QUOTE_TOOL},
                        {"turn": 3, "part": "reply", "quote": "I never said this"},
                    ],
                },
            ]
        }
    )  # fmt: skip


def extract(study, **kwargs):
    run = prepare(study, RunRequest(judge="llm-extract", group="g1", **kwargs))
    return execute(run)


def test_llm_extract_writes_a_sessions_episodes_as_an_extraction_run(agents, group, fake_model):
    fake_model.answer = two_episodes
    run = extract(agents, conversations=["s1"])
    assert run.status == JudgeRunStatus.DONE
    # one call, the whole session turn-numbered with its parts labelled
    assert len(fake_model.requests) == 1
    text = fake_model.last_prompt()
    for label in ("=== Turn 1 ===", "=== Turn 4 ===", "[user]", "[thinking 0]", "[tool_call 1]",
                  "[tool_result 2]", "[reply]"):  # fmt: skip
        assert label in text
    extraction = ExtractionRun.objects.get(study=agents)
    assert extraction.name == run.user.username == f"llm-fake-model@{run.version}"
    assert extraction.source == "fake-model"
    assert extraction.parameters["prompt_digest"] == run.prompt_digest
    episodes = list(extraction.episodes.order_by("first_turn"))
    assert [(e.first_turn, e.last_turn, e.goal) for e in episodes] == [
        (1, 2, "keep the API"),
        (2, 3, "keep the tests"),
    ]
    # the made-up quote dropped and counted, the other located in the tool call's text
    kept = list(episodes[1].evidence.all())
    assert [(q.part, q.quote) for q in kept] == [("tool_call", QUOTE_TOOL)]
    assert extraction.counts == {
        "read": 2, "imported": 2, "dropped_confidence": 0, "rejected": 0, "quotes_missing": 1,
    }  # fmt: skip
    assert run.counts["quotes_dropped"] == 1 and run.counts["episodes_imported"] == 2
    assert any("quote not found in turn 3 reply" in n for n in run.counts["notes"])


def test_llm_extract_drops_low_confidence_and_rejects_a_quoteless_episode(
    agents, group, fake_model
):
    def answer(body):
        return json.dumps({"episodes": [
            {"first_turn": 1, "last_turn": 1, "goal": "a", "confidence": 0.2,
             "evidence": [{"turn": 1, "part": "user", "quote": QUOTE_USER}]},
            {"first_turn": 1, "last_turn": 1, "goal": "b", "confidence": 0.9,
             "evidence": [{"turn": 1, "part": "user", "quote": "not there"}]},
            {"first_turn": 9, "last_turn": 9, "goal": "c", "confidence": 0.9,
             "evidence": [{"turn": 1, "part": "user", "quote": QUOTE_USER}]},
        ]})  # fmt: skip

    fake_model.answer = answer
    run = extract(agents, conversations=["s2"], min_confidence=0.5, run="ext-a")
    extraction = ExtractionRun.objects.get(name="ext-a")
    assert extraction.episodes.count() == 0
    assert extraction.counts["dropped_confidence"] == 1
    assert extraction.counts["rejected"] == 2
    assert run.counts["rejected"] == 2
    assert any("last_turn: 9 out of range" in n for n in run.counts["notes"])
    # a session answered without a kept episode is done: the re-run asks nothing
    rerun = extract(agents, conversations=["s2"], min_confidence=0.5, run="ext-a")
    assert rerun.pk != run.pk and rerun.counts["already_scored"] == 1
    assert len(fake_model.requests) == 1


def test_llm_extract_budget_stops_and_a_larger_budget_resumes(agents, group, fake_model):
    fake_model.answer = two_episodes
    run = extract(agents, max_calls=1)
    assert run.status == JudgeRunStatus.STOPPED
    assert "budget of 1 calls" in run.counts["stopped"]
    extraction = ExtractionRun.objects.get()
    assert extraction.episodes.values("conversation").distinct().count() == 1
    again = extract(agents, max_calls=5)
    assert again.pk == run.pk and again.status == JudgeRunStatus.DONE
    assert len(fake_model.requests) == 2  # the second session only
    assert ExtractionRun.objects.count() == 1
    assert extraction.episodes.count() == 4


def test_dry_runs_estimate_sessions_and_episodes_without_a_call(agents, group, fake_model):
    run = prepare(agents, RunRequest(judge="llm-extract", group="g1"))
    e = run.counts["estimate"]
    assert (e["units"], e["to_score"], e["calls"]) == (2, 2, 2)
    assert e["prompt_tokens"] > (len(run.prompt_text) // 4) * 2
    assert run.status == JudgeRunStatus.PLANNED and fake_model.requests == []
    assert not ExtractionRun.objects.exists()  # a dry run writes no extraction run
    fake_model.answer = two_episodes
    execute(run)
    name = ExtractionRun.objects.get().name
    for judge in ("llm-validate", "llm-annotate"):
        planned = prepare(agents, RunRequest(judge=judge, group="g1", units="episodes", run=name))
        e = planned.counts["estimate"]
        assert (e["units"], e["to_score"], e["calls"]) == (4, 4, 4)
        assert e["completion_tokens"] > 0
    assert len(fake_model.requests) == 2


@pytest.fixture
def extracted(agents, group, fake_model):
    fake_model.answer = two_episodes
    extract(agents, run="ext")
    fake_model.requests.clear()
    return ExtractionRun.objects.get(name="ext")


def test_llm_validate_writes_the_runs_validator_verdicts(agents, group, extracted, fake_model):
    def verdict(body):
        assert body["response_format"]["json_schema"]["name"] == "episode_verdict"
        valid = "keep the API" in body["messages"][-1]["content"]
        reason = "" if valid else "normative_prior_bias"
        return json.dumps({"valid": valid, "invalid_reason": reason, "rationale": "because"})

    fake_model.answer = verdict
    run = prepare(agents, RunRequest(judge="llm-validate", group="g1", run="ext"))
    run = execute(run)
    # the sessions' episodes read alike: the second of each pair comes from the call cache
    assert run.status == JudgeRunStatus.DONE and len(fake_model.requests) == 2
    assert run.counts["cached"] == 2 and run.counts["scored"] == 4
    prompt = fake_model.requests[0]["messages"][-1]["content"]
    assert "Alignment goal: keep the API" in prompt and QUOTE_USER in prompt
    assert "=== Turn 3 ===" not in prompt  # the episode's turns 1-2 only
    episodes = extracted.episodes.all()
    assert {(e.goal, e.run_valid, e.run_invalid_reason) for e in episodes} == {
        ("keep the API", True, ""),
        ("keep the tests", False, "normative_prior_bias"),
    }
    assert (run.counts["valid"], run.counts["invalid"]) == (2, 2)
    assert JudgeScore.objects.filter(run=run, type=None).count() == 4
    # what the measures read as the run's own verdict
    read = {e["run_valid"] for e in load(agents)["episodes"]}
    assert read == {True, False}
    extracted.refresh_from_db()
    assert extracted.parameters["validator"]["judge_run"] == run.pk
    # nothing of it is a person's judgement
    assert not EpisodeJudgement.objects.exists()
    # a re-run asks nothing
    rerun = execute(prepare(agents, RunRequest(judge="llm-validate", group="g1", run="ext")))
    assert rerun.counts["already_scored"] == 4 and len(fake_model.requests) == 2


def test_llm_validate_needs_an_existing_run(agents, group, fake_model):
    with pytest.raises(JudgeRefused, match="run: name the extraction run"):
        prepare(agents, RunRequest(judge="llm-validate", group="g1"))
    with pytest.raises(JudgeRefused, match="no extraction run 'nope'"):
        prepare(agents, RunRequest(judge="llm-validate", group="g1", run="nope"))


def test_llm_annotate_labels_episodes_as_the_judges_round_1(
    agents, group, extracted, fake_model, alice
):
    def labels(body):
        schema = body["response_format"]["json_schema"]["schema"]
        axis = next(iter(schema["properties"]))
        codes = schema["properties"][axis]["items"]["properties"]["type"]["enum"]
        out = {a: [] for a in schema["properties"]}
        out[axis] = [
            {"type": codes[0], "score": 0.9, "quotes": [QUOTE_USER, "made up"]},
            {"type": codes[1], "score": 0.2, "quotes": []},
        ]
        return json.dumps(out)

    fake_model.answer = labels
    request = RunRequest(judge="llm-annotate", group="g1", units="episodes", run="ext")
    run = execute(prepare(agents, request))
    assert run.status == JudgeRunStatus.DONE and run.counts["scored"] == 4
    assert len(fake_model.requests) == 2  # the second session's alike episodes: cached
    assert "Taxonomy:" in fake_model.requests[0]["messages"][0]["content"]
    rows = EpisodeJudgement.objects.filter(annotator=run.user, is_current=True)
    assert rows.count() == 4
    axis = next(iter(run.study.taxonomy_version.type_list())).axis.code
    first = run.study.taxonomy_version.type_list()[0].code
    for row in rows:
        assert (row.round, row.valid, row.source) == (1, True, Source.JUDGE)
        assert row.labels == {axis: [first]}
    # every type's score kept on the episode; the made-up quote dropped and counted
    scores = JudgeScore.objects.filter(run=run)
    assert scores.filter(turn__isnull=False).count() == 0
    n_types = len(run.study.taxonomy_version.type_list())
    assert scores.count() == 4 * n_types
    top = scores.get(episode=extracted.episodes.first(), type__code=first)
    assert top.score == 0.9 and top.evidence["quotes"] == [QUOTE_USER]
    assert run.counts["quotes_dropped"] == 4
    # seated as the group's judge: it never votes (the measures count the annotators only)
    assert group.seat_of(run.user) == Seat.JUDGE
    data = load(agents)
    assert all(j["annotator"] == alice.username for j in data["judgements"])


def test_run_judge_command_extracts_and_refuses_what_it_cannot(agents, group, fake_model):
    fake_model.answer = two_episodes
    out = StringIO()
    call_command("run_judge", "ag", "--judge", "llm-extract", "--group", "g1",
                 "--run", "cmd", "--min-confidence", "0.5", stdout=out)  # fmt: skip
    assert "2 of 2 sessions judged" in out.getvalue()
    assert "extraction run cmd: 4 episodes written" in out.getvalue()
    assert Episode.objects.filter(run__name="cmd").count() == 4
    with pytest.raises(CommandError, match="--run: study ag already has an extraction run"):
        call_command("run_judge", "ag", "--judge", "llm-extract", "--group", "g1",
                     "--run", "cmd", "--temperature", "0.5")  # fmt: skip
    with pytest.raises(CommandError, match="--units: detector"):
        call_command("run_judge", "ag", "--judge", "code-rollback", "--group", "g1",
                     "--units", "episodes")  # fmt: skip
    out = StringIO()
    call_command("run_judge", "ag", "--judge", "llm-validate", "--group", "g1", "--run", "cmd",
                 "--dry-run", stdout=out)  # fmt: skip
    assert "4 of 4 episodes to score, about 4 calls" in out.getvalue()


def test_a_score_is_on_exactly_one_card_or_episode(agents, group, extracted):
    from django.db import IntegrityError, transaction

    run = prepare(agents, RunRequest(judge="llm-validate", group="g1", run="ext"))
    episode = extracted.episodes.first()
    card = episode.conversation.turns.first()
    for where in ({}, {"turn": card, "episode": episode}):
        with pytest.raises(IntegrityError), transaction.atomic():
            JudgeScore.objects.create(run=run, score=1.0, **where)
    JudgeScore.objects.create(run=run, episode=episode, score=1.0)
