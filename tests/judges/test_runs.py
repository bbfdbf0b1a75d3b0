"""Judge runs (issue 22, points 2 and 3) against the mock transport: `llm-annotate` asks once
per card with the taxonomy and the context up to the card, keeps every score, labels what
passes the threshold as its pseudo-user's round-1 labels, checks its quotes against the
stored text; the dry run's estimate calls nothing; a budget stops a run, a larger one
resumes it; a re-run skips what is scored and the call cache answers what was asked;
a new threshold relabels from the kept scores without a call; a detector (a local fake
behind the registry's interface) writes nothing where it does not apply."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from io import StringIO

import httpx2
import pytest
from django.core.management import CommandError, call_command

from annotation.actions.judges import (
    JudgeRefused,
    RunRequest,
    execute,
    prepare,
    rethreshold,
)
from annotation.models import (
    Annotation,
    CardState,
    JudgeRun,
    JudgeRunStatus,
    JudgeScore,
    ModelCall,
    Source,
)
from tests.factories import make_conversation, make_group, make_user
from tests.model_stub import completion

pytestmark = pytest.mark.django_db

FOUND = "please write function number"  # in every card's user message (factories)


@pytest.fixture
def group(study, alice):
    group = make_group(study, "g1", annotators=[alice])
    make_conversation(study, "c1", n_turns=3, group=group)
    make_conversation(study, "c2", n_turns=1, group=group)
    return group


def labeller(scores: dict[str, float], quotes=(FOUND,)):
    """An answer function: per axis of the request's schema, the given types' scores."""

    def answer(body: dict) -> str:
        schema = body["response_format"]["json_schema"]["schema"]
        out = {}
        for axis, prop in schema["properties"].items():
            codes = prop["items"]["properties"]["type"]["enum"]
            out[axis] = [
                {"type": code, "score": score, "quotes": list(quotes)}
                for code, score in scores.items()
                if code in codes
            ]
        return json.dumps(out)

    return answer


def judge_rows(run: JudgeRun):
    return Annotation.objects.filter(annotator=run.user, is_current=True).order_by("turn__pk")


def run_llm(study, **kwargs) -> JudgeRun:
    run = prepare(study, RunRequest(judge="llm-annotate", **kwargs))
    return execute(run)


def test_llm_annotate_asks_once_per_card_and_labels_what_passes(study, group, fake_model):
    fake_model.answer = labeller({"code_rollback": 0.9, "ambiguous_instruction": 0.2})

    run = run_llm(study)

    assert run.status == JudgeRunStatus.DONE
    assert len(fake_model.requests) == 4 and run.calls == 4
    assert run.prompt_tokens == 400 and run.completion_tokens == 40  # the stub's usage
    # the pseudo-user: per model and digest, inactive, no password, the group's judge
    assert run.user.username == f"llm-fake-model@{run.version}" and len(run.version) == 6
    assert not run.user.is_active and not run.user.has_usable_password()
    assert list(group.judges.all()) == [run.user]
    # every score kept (the under-threshold ones and the types the answer left out)
    n_types = study.taxonomy_version.types_by_code().__len__()
    assert JudgeScore.objects.filter(run=run).count() == 4 * n_types
    low = JudgeScore.objects.get(run=run, type__code="ambiguous_instruction", turn__index=1,
                                 turn__conversation__external_id="c1")  # fmt: skip
    assert low.score == 0.2
    # labels: round 1, source judge, only the type at or over the threshold
    rows = list(judge_rows(run))
    assert len(rows) == 4
    assert {(r.round, r.source) for r in rows} == {(1, Source.JUDGE)}
    assert {tuple(t.code for t in r.types.all()) for r in rows} == {("code_rollback",)}
    # a judge moves no card
    assert not CardState.objects.exists()


def test_the_request_has_the_taxonomy_a_schema_per_axis_and_the_context_up_to_the_card(
    study, group, fake_model
):
    fake_model.answer = labeller({})
    run_llm(study)

    third = next(
        b for b in fake_model.requests if "=== Turn 3: THE CARD" in b["messages"][1]["content"]
    )
    system, user = (m["content"] for m in third["messages"])
    assert "code_rollback" in system and "Axis" in system  # the taxonomy, with definitions
    assert "c1: please write function number 1" in user  # the context
    assert "c1: please write function number 2" in user
    assert user.index("number 2") < user.index("THE CARD")
    schema = third["response_format"]["json_schema"]["schema"]
    axis = next(iter(schema["properties"].values()))
    assert "code_rollback" in axis["items"]["properties"]["type"]["enum"]
    assert third["max_tokens"] and third["temperature"] == 0.0


def test_quotes_are_checked_against_the_stored_text(study, group, fake_model):
    spaced = "please  write\nfunction   number"  # whitespace differs: found normalised
    fake_model.answer = labeller(
        {"code_rollback": 0.8}, quotes=[FOUND, spaced, "words nobody wrote"]
    )

    run = run_llm(study)

    assert run.counts["quotes_dropped"] == 4  # one per card
    score = JudgeScore.objects.filter(run=run, type__code="code_rollback").first()
    assert score.evidence["quotes"] == [FOUND, spaced]
    assert score.evidence["turns"] == [1]
    assert "words nobody wrote" not in judge_rows(run).first().evidence


def test_a_dry_run_estimates_without_a_call_and_is_saved_as_planned(study, group, fake_model):
    out = StringIO()
    call_command("run_judge", "s1", "--judge", "llm-annotate", "--dry-run", stdout=out)

    run = JudgeRun.objects.get()
    assert fake_model.requests == []
    assert run.status == JudgeRunStatus.PLANNED
    estimate = run.counts["estimate"]
    assert estimate["cards"] == 4 and estimate["calls"] == 4
    # each card's prompt: the system prompt and taxonomy, the context before it, the card
    assert estimate["prompt_tokens"] > 4 * len(run.prompt_text) // 4
    assert estimate["completion_tokens"] == 4 * 150
    assert f"about 4 calls and {estimate['tokens']} tokens" in out.getvalue()
    assert "planned run" in out.getvalue()

    # the real run takes up the planned one
    fake_model.answer = labeller({})
    call_command("run_judge", "s1", "--judge", "llm-annotate", stdout=StringIO())
    assert JudgeRun.objects.get().status == JudgeRunStatus.DONE


def test_a_budget_stops_the_run_and_a_larger_one_resumes_it(study, group, fake_model):
    fake_model.answer = labeller({"code_rollback": 0.9})

    run = run_llm(study, max_calls=2)

    assert run.status == JudgeRunStatus.STOPPED
    assert run.calls == 2 and len(fake_model.requests) == 2
    assert "budget of 2 calls" in run.counts["stopped"]
    assert "2 of 4 cards" in run.counts["stopped"]
    assert judge_rows(run).count() == 2

    resumed = run_llm(study, max_calls=10)

    assert resumed.pk == run.pk and resumed.status == JudgeRunStatus.DONE
    assert len(fake_model.requests) == 4  # the 2 left, nothing asked twice
    assert resumed.calls == 4 and resumed.counts["already_scored"] == 2
    assert judge_rows(run).count() == 4


def test_a_token_budget_stops_the_run(study, group, fake_model):
    fake_model.answer = labeller({})
    run = run_llm(study, max_tokens=150)  # 110 tokens a call (the stub's usage)
    assert run.status == JudgeRunStatus.STOPPED and run.calls == 2
    assert "budget of 150 tokens" in run.counts["stopped"]


def test_a_rerun_skips_what_is_scored_and_the_cache_answers_what_was_asked(
    study, group, fake_model
):
    fake_model.answer = labeller({"code_rollback": 0.9})
    first = run_llm(study)
    assert ModelCall.objects.count() == 4

    again = run_llm(study)  # the same judge, version and group: nothing left to score
    assert again.pk != first.pk and again.counts["already_scored"] == 4
    assert len(fake_model.requests) == 4 and again.calls == 0

    JudgeRun.objects.all().delete()  # the scores gone: asked again, from the call cache
    third = run_llm(study)
    assert len(fake_model.requests) == 4
    assert third.calls == 0 and third.counts["cached"] == 4
    assert third.prompt_tokens == 0
    assert judge_rows(third).count() == 4


def test_retries_count_as_calls(study, group, fake_model):
    answers = iter([httpx2.Response(503, json={})])
    good = labeller({})

    def answer(body):
        return next(answers, None) or completion(good(body))

    fake_model.answer = answer
    run = run_llm(study)
    assert run.status == JudgeRunStatus.DONE and run.calls == 5
    assert fake_model.waits  # it waited before asking again


def test_a_card_without_a_usable_answer_is_counted_and_asked_again_next_time(
    study, group, fake_model
):
    fake_model.answer = lambda body: "not json"
    run = run_llm(study)
    assert run.status == JudgeRunStatus.FAILED
    assert run.counts["errors"] == 4 and "not JSON" in run.counts["error_lines"][0]
    assert "no card got a usable answer" in run.counts["stopped"]

    fake_model.answer = labeller({})
    resumed = run_llm(study)
    assert resumed.pk == run.pk and resumed.status == JudgeRunStatus.DONE
    assert resumed.counts["scored"] == 4


def test_a_new_threshold_relabels_from_the_kept_scores_without_a_call(study, group, fake_model):
    fake_model.answer = labeller({"code_rollback": 0.9, "ambiguous_instruction": 0.4})
    run = run_llm(study)
    asked = len(fake_model.requests)

    out = StringIO()
    call_command("run_judge", "s1", "--rethreshold", str(run.pk), "0.3", stdout=out)

    assert len(fake_model.requests) == asked
    assert "no call made" in out.getvalue()
    run.refresh_from_db()
    assert run.threshold == 0.3
    codes = {tuple(sorted(t.code for t in r.types.all())) for r in judge_rows(run)}
    assert codes == {("ambiguous_instruction", "code_rollback")}

    rethreshold(run, 0.95)  # nothing passes: llm-annotate says "no smell"
    assert {r.types.count() for r in judge_rows(run)} == {0}
    assert judge_rows(run).count() == 4
    # the earlier labels are kept as history
    assert Annotation.objects.filter(annotator=run.user, is_current=False).count() == 8


def test_another_prompt_is_another_version_and_pseudo_user(study, group, fake_model, tmp_path):
    fake_model.answer = labeller({})
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Label the card.", encoding="utf-8")
    call_command("run_judge", "s1", "--judge", "llm-annotate", stdout=StringIO())
    call_command(
        "run_judge", "s1", "--judge", "llm-annotate", "--prompt", str(prompt), stdout=StringIO()
    )

    default, own = JudgeRun.objects.order_by("pk")
    assert own.prompt_text == "Label the card." and own.version != default.version
    assert own.user != default.user and own.prompt_digest != default.prompt_digest
    assert fake_model.requests[-1]["messages"][0]["content"].startswith("Label the card.")
    assert len(fake_model.requests) == 8


def test_a_sample_and_a_conversations_file_choose_the_cards(study, group, fake_model, tmp_path):
    fake_model.answer = labeller({})
    run = run_llm(study, sample=1, seed=3)
    assert run.counts["units_total"] in (1, 3)
    assert len(run.params["conversation_ids"]) == 1

    listed = tmp_path / "ids.txt"
    listed.write_text("c2\nnope\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"ids.txt:2: conversation 'nope' is not assigned"):
        call_command("run_judge", "s1", "--judge", "llm-annotate", "--conversations", str(listed))


@pytest.mark.parametrize(
    "request_, field",
    [
        (RunRequest(judge="llm-annotate", units="turns"), "units"),
        (RunRequest(judge="llm-annotate", run="x"), "run"),
        (RunRequest(judge="llm-annotate", units="episodes", run="x", model="m"), "run"),
        (RunRequest(judge="llm-annotate", min_confidence=0.5), "min_confidence"),
        (RunRequest(judge="llm-extract", min_confidence=2), "min_confidence"),
        (RunRequest(judge="llm-validate"), "run"),
        (RunRequest(judge="llm-validate", run="nope", model="m"), "run"),
        (RunRequest(judge="no-such-judge"), "judge"),
        (RunRequest(judge="llm-annotate", threshold=2), "threshold"),
        (RunRequest(judge="llm-annotate", max_calls=0), "max_calls"),
        (RunRequest(judge="llm-annotate", group="nope"), "group"),
    ],
)
def test_what_cannot_be_run_is_refused_naming_the_parameter(study, group, request_, field):
    with pytest.raises(JudgeRefused) as refused:
        prepare(study, request_)
    assert refused.value.field == field
    assert not JudgeRun.objects.exists()


def test_a_validator_without_its_run_is_refused_with_a_clear_message(study, group):
    with pytest.raises(CommandError, match=r"--run: name the extraction run"):
        call_command("run_judge", "s1", "--judge", "llm-validate")


def test_without_an_endpoint_the_run_fails_saying_what_to_set(study, group, settings):
    settings.CARDSORT_LLM_BASE_URL = ""
    settings.CARDSORT_LLM_MODEL = "m"
    with pytest.raises(CommandError, match="CARDSORT_LLM_BASE_URL"):
        call_command("run_judge", "s1", "--judge", "llm-annotate", stdout=StringIO())


# -- a detector, behind the registry's interface --------------------------------------------


@dataclass(frozen=True)
class TurnView:
    index: int
    user: str
    reply: str


@dataclass(frozen=True)
class Evidence:
    turns: tuple
    quotes: tuple
    detail: str = ""


class EvenTurns:
    """Applies to the turns at an even position (from 0); scores 0.8 at position 2."""

    name, version, smell = "even-turns", "1", "code_rollback"

    def applies(self, history, turn) -> bool:
        return turn.index % 2 == 0

    def score(self, history, turn):
        return (0.8 if turn.index == 2 else 0.1), Evidence((0, turn.index), (turn.user[:10],), "d")


def _detect(detector, turns):
    return [
        (t.index, *detector.score(turns[: t.index], t))
        for t in turns
        if detector.applies(turns[: t.index], t)
    ]


@pytest.fixture
def fake_detectors(monkeypatch):
    module = types.ModuleType("annotation.judges.detectors")
    module.REGISTRY = {"even-turns": EvenTurns()}
    module.TurnView, module.Evidence, module.detect = TurnView, Evidence, _detect
    monkeypatch.setitem(sys.modules, "annotation.judges.detectors", module)
    return module


def test_a_detector_scores_where_it_applies_and_labels_what_passes(study, group, fake_detectors):
    run = execute(prepare(study, RunRequest(judge="even-turns")))

    assert run.user.username == "det-even-turns@1" and run.version == "1"
    assert run.status == JudgeRunStatus.DONE and run.calls == 0
    # c1: positions 0 and 2 apply (turns 1 and 3); c2: position 0 (turn 1); turn 2 of c1
    # is not applicable: nothing written for it
    scored = sorted(
        JudgeScore.objects.filter(run=run).values_list(
            "turn__conversation__external_id", "turn__index", "score"
        )
    )
    assert scored == [("c1", 1, 0.1), ("c1", 3, 0.8), ("c2", 1, 0.1)]
    assert run.counts["not_applicable"] == 1
    evidence = JudgeScore.objects.get(run=run, score=0.8).evidence
    assert evidence["turns"] == [1, 3]  # positions as the turns' indexes
    # only the passing card is labelled
    rows = list(judge_rows(run))
    assert [(r.turn.index, [t.code for t in r.types.all()]) for r in rows] == [
        (3, ["code_rollback"])
    ]

    rethreshold(run, 0.05)
    assert judge_rows(run).count() == 3
    rethreshold(run, 0.9)  # none passes: the detector's labels are retracted
    assert judge_rows(run).count() == 0


def test_a_judge_cannot_sit_where_it_would_see_a_shared_cards_other_labels(
    study, group, fake_detectors
):
    execute(prepare(study, RunRequest(judge="even-turns", group="g1")))
    other = make_group(study, "g2", annotators=[make_user("zoe")])
    # g2 shares c1 with g1: the judge seated in g1 cannot sit in g2 too
    from annotation.models import Conversation

    Conversation.objects.filter(external_id="c1").assign(other)
    with pytest.raises(JudgeRefused, match="round 1 stays blind"):
        prepare(study, RunRequest(judge="even-turns", group="g2"))


def test_a_run_whose_job_was_lost_reads_as_stopped_and_resumes(study, group, fake_model):
    from annotation.actions.judges import settle_lost
    from annotation.models import Job, JobKind

    fake_model.answer = labeller({})
    run = prepare(study, RunRequest(judge="llm-annotate"))
    job = Job.objects.create(study=study, kind=JobKind.JUDGE, params={"run": run.pk})
    run.job, run.status = job, JudgeRunStatus.RUNNING
    run.save()
    job.fail("The worker running this job stopped")

    assert settle_lost(study) == 1  # (the pages and the API reap lost jobs first)
    run.refresh_from_db()
    assert run.status == JudgeRunStatus.STOPPED and "worker" in run.counts["stopped"]
    assert run_llm(study).pk == run.pk  # resumed
