"""manage.py split_conversations (issue 20, point 3): splitting as the study ran it, against
a mock transport. The request bodies (temperature, seed, the lead's prompt, the worked
examples as few-shot pairs, the JSON schema), the parameters kept on the job, no cap, a run
killed midway resumed with nothing asked twice, dropped turns, and --apply."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.intake import llm
from annotation.intake.split_run import BATCH
from annotation.intake.splitting import original_turns
from annotation.judges.client import digest_of
from annotation.models import (
    Conversation,
    Job,
    JobKind,
    JobStatus,
    ModelCall,
    SetAside,
    SplitProposal,
    Turn,
)
from tests.factories import make_conversation, make_group, make_user
from tests.model_stub import StubServer

pytestmark = pytest.mark.django_db

EXAMPLES = [
    {
        "turns": [
            {"user": "sort a list in python", "assistant": "use sorted()"},
            {"user": "what is the capital of France?", "assistant": "Paris"},
            {"user": "now write a SQL join", "assistant": "SELECT ..."},
        ],
        "splits": [{"before_turn": 3, "reason": "SQL is a new task"}],
        "drop_turns": [2],
    },
    {"turns": [{"user": "fix my loop", "assistant": "here"}], "splits": []},
]


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("split_conversations", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def make_corpus(study, n: int, n_turns: int = 3, prefix: str = "c") -> list[Conversation]:
    """`n` conversations of `n_turns` turns, written in two queries."""
    conversations = Conversation.objects.bulk_create(
        Conversation(
            study=study, external_id=f"{prefix}{i}", source_format="native", n_turns=n_turns
        )
        for i in range(n)
    )
    Turn.objects.bulk_create(
        Turn(conversation=c, index=k, user_text=f"{c.external_id} ask {k}", reply_text=f"reply {k}")
        for c in conversations
        for k in range(1, n_turns + 1)
    )
    return conversations


def name_in(body) -> str:
    """The conversation a request asks about (its turns start "<name>: ..." or "<name> ask")."""
    return re.search(r"### Turn 1\nUser: ([^: ]+)", body["messages"][-1]["content"])[1]


def split_at(k: int, drops=()) -> str:
    return json.dumps(
        {"splits": [{"before_turn": k, "reason": "new task"}], "drop_turns": list(drops)}
    )


@pytest.fixture
def files(tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Split this conversation. Answer JSON.", encoding="utf-8")
    examples = tmp_path / "examples.jsonl"
    examples.write_text("\n".join(json.dumps(e) for e in EXAMPLES) + "\n\n", encoding="utf-8")
    return prompt, examples


def test_it_asks_as_the_study_ran_it_and_keeps_every_parameter(study, fake_model, files):
    prompt, examples = files
    c = make_conversation(study, "c1", n_turns=4)
    out, _ = run(
        study.slug, "--temperature", "1.0", "--seed", "7",
        "--prompt", str(prompt), "--examples", str(examples),
    )  # fmt: skip

    (body,) = fake_model.requests
    assert body["temperature"] == 1.0 and body["seed"] == 7
    assert body["response_format"]["json_schema"]["schema"] == llm.ANSWER_SCHEMA
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == "Split this conversation. Answer JSON."
    # an example: its turns as a conversation is shown, its answer as the model gives one
    assert body["messages"][1]["content"].startswith("The conversation has 3 turns.")
    assert "### Turn 2\nUser: what is the capital of France?" in body["messages"][1]["content"]
    assert json.loads(body["messages"][2]["content"]) == {
        "splits": [{"before_turn": 3, "reason": "SQL is a new task"}],
        "drop_turns": [2],
    }
    assert json.loads(body["messages"][4]["content"]) == {"splits": [], "drop_turns": []}
    assert body["messages"][-1]["content"] == llm.messages_for(c)[-1]["content"]

    job = Job.objects.get(kind=JobKind.SPLIT)
    assert job.status == JobStatus.DONE
    normalised = [{**e, "drop_turns": e.get("drop_turns", [])} for e in EXAMPLES]
    assert job.params["examples"] == normalised
    assert job.params["examples_digest"] == digest_of(normalised)
    assert job.params["prompt"] == "Split this conversation. Answer JSON."
    assert job.params["prompt_digest"] == digest_of("Split this conversation. Answer JSON.")
    assert (job.params["temperature"], job.params["seed"]) == (1.0, 7)
    request = job.result["request"]
    assert request["model"] == "fake-model" and request["host"] == "llm.test"
    assert request["examples_digest"] == digest_of(normalised) and request["n_examples"] == 2
    assert request["first_at"] and request["last_at"]
    assert "Model fake-model at llm.test, temperature 1, seed 7, 2 worked examples" in out
    assert "asked: 1 (0 from the call cache, 1 HTTP requests)" in out


def test_the_defaults_are_todays_zero_shot_prompt_at_temperature_0(study, fake_model):
    make_conversation(study, "c1", n_turns=3)
    run(study.slug)
    (body,) = fake_model.requests
    assert body["temperature"] == 0 and "seed" not in body
    assert body["messages"][0] == {"role": "system", "content": llm.SYSTEM_PROMPT}
    assert len(body["messages"]) == 2


def test_it_asks_the_set_with_at_least_min_turns_and_at_most_max(study, fake_model, alice):
    make_corpus(study, 5, n_turns=2, prefix="short")
    long = make_corpus(study, 5, n_turns=4, prefix="long")
    Conversation.objects.filter(pk=long[0].pk).update(set_aside=SetAside.FILTERED)
    make_conversation(study, "given", n_turns=4, group=make_group(study, "g", [alice]))
    out, _ = run(study.slug, "--min-turns", "3")
    asked = {name_in(r) for r in fake_model.requests}
    assert asked == {"long1", "long2", "long3", "long4"}
    assert Job.objects.get().result["conversations"] == 4
    fake_model.requests.clear()
    run(study.slug, "--max", "3")  # the first three by id: short0-2, not asked before
    asked = [name_in(r) for r in fake_model.requests]
    assert asked == ["short0", "short1", "short2"]


@pytest.mark.slow
def test_the_cap_is_gone(study, fake_model):
    """2,500 conversations in one job, read in batches; every one asked once."""
    make_corpus(study, 2500, n_turns=2)
    out, _ = run(study.slug)
    job = Job.objects.get()
    assert job.status == JobStatus.DONE
    assert job.result["asked"] == job.result["answered"] == 2500
    assert len(fake_model.requests) == 2500
    assert "asked: 2500 (0 from the call cache, 2500 HTTP requests)" in out


def test_a_rerun_costs_nothing(study, fake_model):
    make_corpus(study, 30)
    run(study.slug, "--temperature", "1", "--seed", "3")
    out, _ = run(study.slug, "--temperature", "1", "--seed", "3")
    assert len(fake_model.requests) == 30
    assert "asked: 30 (30 from the call cache, 0 HTTP requests)" in out


class Killed(BaseException):
    """The process dies: nothing in the job's code may catch it."""


def test_a_killed_run_resumes_where_it_stopped_and_asks_nothing_twice(study, fake_model, settings):
    conversations = make_corpus(study, BATCH + 50)
    answered: list[str] = []

    def dies_at_250(body):
        name = name_in(body)
        if len(fake_model.requests) == 250:
            raise Killed()
        answered.append(name)
        return split_at(2)

    fake_model.answer = dies_at_250
    with pytest.raises(Killed):
        run(study.slug)
    job = Job.objects.get()
    assert job.status == JobStatus.RUNNING
    assert job.result["cursor"] == conversations[BATCH - 1].pk  # the first batch is kept
    assert len(answered) == 249

    fake_model.answer = lambda body: split_at(2)
    fake_model.requests.clear()
    out, _ = run(study.slug)
    assert f"Resuming splitting job #{job.pk} where it stopped." in out
    assert Job.objects.count() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.params["runs"] == 2
    # the second batch again: 49 answers from the cache, one that never came, none else
    assert len(fake_model.requests) == 1
    assert job.result["asked"] == job.result["answered"] == BATCH + 50
    assert job.result["cached"] == 49
    assert ModelCall.objects.count() == BATCH + 50
    assert SplitProposal.objects.filter(status="open").count() == BATCH + 50


def test_a_lost_worker_job_is_queued_again_and_resumes(
    study, lead, fake_model, django_capture_on_commit_callbacks, monkeypatch
):
    from annotation.tasks import reap_lost_jobs, run_split_proposals

    make_corpus(study, 3)
    job = Job.objects.create(
        study=study, kind=JobKind.SPLIT, params={"min_turns": 2}, created_by=lead
    )
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, heartbeat_at="2000-01-01T00:00Z")
    queued: list[int] = []
    monkeypatch.setattr(run_split_proposals, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        assert reap_lost_jobs() == 1
    assert queued == [job.pk]
    run_split_proposals.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.result["asked"] == 3


def test_apply_splits_every_open_proposal_and_drops_off_topic_turns(study, fake_model, alice):
    a = make_conversation(study, "a", n_turns=6)
    b = make_conversation(study, "b", n_turns=4)
    whole = make_conversation(study, "whole", n_turns=3)
    answers = {
        "a": split_at(4, drops=[2, 5]),
        "b": json.dumps({"splits": [], "drop_turns": [1]}),
        "whole": json.dumps({"splits": [], "drop_turns": []}),
    }
    fake_model.answer = lambda body: answers[name_in(body)]
    out, err = run(study.slug, "--apply")

    job = Job.objects.get()
    assert job.status == JobStatus.DONE
    a.refresh_from_db()
    assert a.set_aside == SetAside.SPLIT and a.turns.count() == 6  # the original keeps all
    parts = list(a.split_parts.order_by("split_first_turn"))
    assert [p.external_id for p in parts] == ["a#1", "a#2"]
    assert [list(p.turns.order_by("index").values_list("index", "user_text")) for p in parts] == [
        [(1, "a: please write function number 1"), (2, "a: please write function number 3")],
        [(1, "a: please write function number 4"), (2, "a: please write function number 6")],
    ]
    assert [original_turns(p) for p in parts] == [[1, 3], [4, 6]]
    dropped = SplitProposal.objects.filter(kind="drop", status="applied")
    assert sorted(dropped.values_list("conversation__external_id", "turn_index")) == [
        ("a", 2), ("a", 5), ("b", 1),
    ]  # fmt: skip
    (b_part,) = Conversation.objects.filter(split_from=b)
    assert (b_part.external_id, b_part.n_turns, b_part.split_first_turn) == ("b#1", 3, 2)
    assert not Conversation.objects.filter(split_from=whole).exists()
    applied = job.result["applied"]
    assert (applied["conversations"], applied["parts"], applied["dropped_turns"]) == (2, 3, 3)
    assert "applied: 2 conversations split into 3 parts; dropped turns: 3; refused: 0" in out


def test_apply_only_applies_in_one_job_and_reports_what_it_cannot(study, fake_model, alice):
    a = make_conversation(study, "a", n_turns=4)
    given = make_conversation(study, "given", n_turns=4)
    for c in (a, given):
        SplitProposal.objects.create(conversation=c, turn_index=3)
    Conversation.objects.filter(pk=given.pk).assign(make_group(study, "g", [alice]))
    out, err = run(study.slug, "--apply-only")
    assert fake_model.requests == []
    job = Job.objects.get()
    assert job.status == JobStatus.DONE and job.params["what"] == "apply"
    assert a.split_parts.count() == 2 and not given.split_parts.exists()
    assert "applied: 1 conversations split into 2 parts; dropped turns: 0; refused: 1" in out
    assert "given is assigned to group 'g'" in err
    assert SplitProposal.objects.get(conversation=given).status == "open"


def test_bad_examples_are_named_by_line_and_field_and_nothing_is_asked(study, fake_model, tmp_path):
    make_conversation(study, "c1", n_turns=3)
    bad = tmp_path / "ex.jsonl"
    good_line = json.dumps(EXAMPLES[0])
    bad.write_text(
        "\n".join(
            [
                good_line,
                "{not json",
                json.dumps({"turns": [], "splits": []}),
                json.dumps(
                    {"turns": [{"user": "a", "assistant": 1}], "splits": [{"before_turn": 2}]}
                ),
                json.dumps({**EXAMPLES[0], "drop_turns": [4], "answer": 1}),
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, "--examples", str(bad))
    message = str(caught.value)
    assert f"{bad}:2: (line): not JSON" in message
    assert f"{bad}:3: turns: missing, or not a list of at least one turn" in message
    assert f"{bad}:4: turns[0].assistant: missing, or not a string" in message
    assert f"{bad}:4: splits[0].before_turn: 2 is not a turn from 2 to 1" in message
    assert f"{bad}:5: answer: unknown field" in message
    assert f"{bad}:5: drop_turns[0]: 4 is not a turn from 1 to 3" in message
    assert f"{bad}:1:" not in message
    assert fake_model.requests == [] and not Job.objects.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--min-turns", "1"], "--min-turns: min_turns: at least 2"),
        (["--temperature", "3"], "--temperature: temperature: 3 is not from 0 to 2"),
        (["--max", "0"], "--max: max: at least 1"),
        (["--prompt", "/no/such/file"], "--prompt: no such file: /no/such/file"),
    ],
)
def test_bad_parameters_are_refused_before_anything_is_asked(study, fake_model, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run(study.slug, *args)
    assert not Job.objects.exists()


def test_it_fails_when_the_feature_is_off(study, settings):
    settings.CARDSORT_LLM_BASE_URL = ""
    make_conversation(study, "c1", n_turns=3)
    with pytest.raises(CommandError, match="LLM split proposals are off"):
        run(study.slug)
    assert Job.objects.get().status == JobStatus.FAILED


def test_an_unknown_study_is_named(db):
    make_user("x")
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        run("nope")


def test_it_runs_end_to_end_against_a_local_stub_server(study, settings, files):
    """The whole stack over real HTTP (no mock transport): the SDK, the size cap, no key."""
    _prompt, examples = files
    make_conversation(study, "a", n_turns=5)
    make_conversation(study, "b", n_turns=2)

    def answer(body) -> str:
        if name_in(body) == "a":
            return split_at(3, drops=[5])
        return json.dumps({"splits": [], "drop_turns": []})

    with StubServer(answer) as stub:
        settings.CARDSORT_LLM_BASE_URL = stub.base_url
        settings.CARDSORT_LLM_MODEL = "stub-model"
        settings.CARDSORT_LLM_API_KEY = ""
        out, _ = run(study.slug, "--examples", str(examples), "--temperature", "1", "--apply")
    assert [b["path"] for b in stub.bodies] == ["/v1/chat/completions"] * 2
    assert all("authorization" not in {k.lower() for k in h} for h in stub.headers)
    assert "applied: 1 conversations split into 2 parts; dropped turns: 1; refused: 0" in out
    a = Conversation.objects.get(external_id="a")
    assert [original_turns(p) for p in a.split_parts.order_by("split_first_turn")] == [
        [1, 2],
        [3, 4],
    ]
