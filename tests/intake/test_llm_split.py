"""LLM split proposals through the model client, against a mock transport (tests/
model_stub.py): good answers, answers that break the schema, points and dropped turns out of
range, HTTP errors. The job runs eagerly; a bad answer is reported for its conversation and
never stops the others."""

from __future__ import annotations

import json

import httpx2
import pytest

from annotation.intake import llm
from annotation.models import Job, JobKind, JobStatus, SplitProposal, Turn
from annotation.tasks import run_split_proposals
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db


def answer_of(splits=(), drops=()) -> str:
    return json.dumps(
        {
            "splits": [{"before_turn": k, "reason": reason} for k, reason in splits],
            "drop_turns": list(drops),
        }
    )


# what the fake model answers, by the marker in the conversation's first user message
ANSWERS = {
    "[good]": answer_of([(3, "The user moves from sorting to a web scraper."), (5, "SQL now.")]),
    "[fenced]": f"```json\n{answer_of([(2, 'new task')])}\n```",
    "[none]": answer_of(),
    "[badjson]": "Sure! The topic changes at turn 3.",
    "[schema]": '{"splits": [{"before_turn": "x", "reason": ""}], "drop_turns": []}',
    "[range]": answer_of([(1, "a"), (9, "b"), (4, "c")], drops=[0, 2, 7]),
    "[drop]": answer_of([(4, "a new task")], drops=[2]),
}


def answer(body):
    prompt = body["messages"][-1]["content"]
    if "[500]" in prompt:
        return httpx2.Response(500, json={"error": {"message": "model overloaded"}})
    if "[envelope]" in prompt:
        return {"object": "error"}
    return next((a for marker, a in ANSWERS.items() if marker in prompt), answer_of())


@pytest.fixture
def model(fake_model):
    fake_model.answer = answer
    return fake_model


def conversation(study, external_id: str, marker: str, n_turns: int = 6):
    c = make_conversation(study, external_id, n_turns=n_turns)
    Turn.objects.filter(conversation=c, index=1).update(user_text=f"{marker} sort a list")
    return c


def run_job(study, lead, conversations) -> Job:
    job = Job.objects.create(
        study=study,
        kind=JobKind.SPLIT,
        created_by=lead,
        params={"conversations": [c.pk for c in conversations]},
    )
    run_split_proposals.apply(args=[job.pk])
    job.refresh_from_db()
    return job


def test_it_stores_the_proposed_points_as_open_proposals(study, lead, model):
    good = conversation(study, "good", "[good]")
    job = run_job(study, lead, [good])

    assert job.status == JobStatus.DONE, job.error
    assert job.progress == job.total == 1
    rows = list(SplitProposal.objects.filter(conversation=good))
    assert [(p.turn_index, p.kind, p.status, p.source, p.job_id) for p in rows] == [
        (3, "split", "open", "llm", job.pk),
        (5, "split", "open", "llm", job.pk),
    ]
    assert rows[0].reason == "The user moves from sorting to a web scraper."
    assert job.result["proposals"] == 2 and job.result["errors"] == []
    # the request: the configured endpoint and model, temperature 0, the schema
    (body,) = model.requests
    assert model.urls == ["http://llm.test/v1/chat/completions"]
    assert body["model"] == "fake-model" and body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"] == llm.ANSWER_SCHEMA
    assert body["messages"][0] == {"role": "system", "content": llm.SYSTEM_PROMPT}
    assert "### Turn 6" in body["messages"][-1]["content"]


def test_dropped_turns_are_proposed_as_drops(study, lead, model):
    c = conversation(study, "d", "[drop]")
    job = run_job(study, lead, [c])
    rows = SplitProposal.objects.filter(conversation=c).order_by("turn_index")
    assert [(p.turn_index, p.kind) for p in rows] == [(2, "drop"), (4, "split")]
    assert (job.result["proposals"], job.result["drops"], job.result["parts"]) == (1, 1, 2)


def test_bad_answers_are_reported_per_conversation_and_the_job_goes_on(study, lead, model):
    cs = [
        conversation(study, "bad-json", "[badjson]"),
        conversation(study, "schema", "[schema]"),
        conversation(study, "server-error", "[500]"),
        conversation(study, "not-chat", "[envelope]"),
        conversation(study, "out-of-range", "[range]", n_turns=5),
        conversation(study, "fenced", "[fenced]"),
        conversation(study, "one-topic", "[none]"),
    ]
    job = run_job(study, lead, cs)

    assert job.status == JobStatus.DONE, job.error
    errors = job.result["errors"]
    assert any(e.startswith("bad-json: the answer is not JSON") for e in errors)
    assert any(
        e.startswith("schema: the answer does not follow the schema at splits[0].before_turn")
        for e in errors
    )
    assert any(e.startswith("server-error: ") and "HTTP 500: model overloaded" in e for e in errors)
    assert any(e.startswith("not-chat: ") and "choices[0].message.content" in e for e in errors)
    assert "out-of-range: split 1: before_turn 1 is not a turn from 2 to 5" in errors
    assert "out-of-range: split 2: before_turn 9 is not a turn from 2 to 5" in errors
    assert "out-of-range: drop 1: turn 0 is not a turn from 1 to 5" in errors
    assert "out-of-range: drop 3: turn 7 is not a turn from 1 to 5" in errors
    assert not any("sk-test-key" in e for e in errors)
    # the good points of every answer were kept
    kept = SplitProposal.objects.order_by("conversation__external_id", "turn_index")
    assert [(p.conversation.external_id, p.kind, p.turn_index) for p in kept] == [
        ("fenced", "split", 2),
        ("out-of-range", "drop", 2),
        ("out-of-range", "split", 4),
    ]
    assert job.result["asked"] == 7 and job.result["answered"] == 3


def test_the_job_fails_when_no_conversation_gets_an_answer(study, lead, model):
    job = run_job(study, lead, [conversation(study, "e", "[500]")])
    assert job.status == JobStatus.FAILED
    assert "No conversation got a usable answer" in job.error
    assert "HTTP 500" in job.error


def test_the_job_fails_and_says_so_when_the_feature_is_off(study, lead, settings):
    settings.CARDSORT_LLM_BASE_URL = ""
    settings.CARDSORT_LLM_MODEL = ""
    job = run_job(study, lead, [conversation(study, "g", "[good]")])
    assert job.status == JobStatus.FAILED
    assert "LLM split proposals are off" in job.error
    assert "CARDSORT_LLM_BASE_URL and CARDSORT_LLM_MODEL" in job.error
    assert not SplitProposal.objects.exists()


def test_it_skips_what_cannot_be_split_without_asking(study, lead, model):
    from annotation.intake.splitting import split

    one = conversation(study, "one", "[good]", n_turns=1)
    original = conversation(study, "orig", "[good]", n_turns=4)
    parts = split(original, [3])
    job = run_job(study, lead, [one, original, parts[0]])
    assert model.requests == []
    assert job.result["skipped"] == [
        "one: one turn: nothing to split",
        "orig: already split",
        "orig#1: a part of a split conversation",
    ]


def test_asking_again_replaces_open_proposals_and_respects_dismissed_ones(study, lead, model):
    good = conversation(study, "good", "[good]")
    run_job(study, lead, [good])
    SplitProposal.objects.filter(turn_index=5).update(status="dismissed")
    run_job(study, lead, [good])
    rows = SplitProposal.objects.filter(conversation=good).order_by("turn_index", "status")
    assert [(p.turn_index, p.status) for p in rows] == [(3, "open"), (5, "dismissed")]
    assert len(model.requests) == 1  # the second job's answer came from the call cache


def test_long_conversations_are_cut_to_the_documented_bound(study):
    long = make_conversation(study, "long", n_turns=200)
    Turn.objects.filter(conversation=long).update(user_text="u" * 5000, reply_text="r" * 5000)
    messages = llm.messages_for(long)
    prompt = messages[-1]["content"]
    assert len(prompt) < llm.PROMPT_CHARS * 1.5  # the bound, plus headings and cut marks
    user_chars, reply_chars = llm.bounds(200)
    assert ("u" * user_chars + "[... ") in prompt and "u" * (user_chars + 1) not in prompt
    assert f"[... {5000 - user_chars} characters cut]" in prompt
    assert "### Turn 200" in prompt
    # a short conversation is sent whole
    short = make_conversation(study, "short", n_turns=2)
    assert "[... " not in llm.messages_for(short)[-1]["content"]


def test_the_job_reads_only_what_it_sends_and_cuts_alike(study, lead, model):
    """The job reads the texts cut in the query: the request is the one messages_for
    makes from the whole conversation."""
    long = make_conversation(study, "long", n_turns=3)
    Turn.objects.filter(conversation=long).update(user_text="u" * 5000, reply_text="r" * 5000)
    run_job(study, lead, [long])
    assert model.requests[0]["messages"] == llm.messages_for(long)


@pytest.mark.parametrize(
    "data, points, drops, problems",
    [
        ({"splits": [{"before_turn": 2, "reason": "x"}], "drop_turns": []}, {2: "x"}, [], 0),
        ({"splits": [], "drop_turns": [4, 1, 4]}, {}, [1, 4], 0),
        ({"splits": [], "drop_turns": [1, 2, 3, 4]}, {}, [], 1),
        ({"splits": [{"before_turn": 5, "reason": ""}], "drop_turns": [0]}, {}, [], 2),
    ],
)
def test_parse_answer(data, points, drops, problems):
    found = llm.parse_answer(data, 4)
    assert found.points == points
    assert found.drops == drops
    assert len(found.problems) == problems


def test_the_job_partial_shows_the_summary_and_each_unusable_answer(client, study, lead, model):
    from django.urls import reverse

    job = run_job(
        study, lead, [conversation(study, "good", "[good]"), conversation(study, "b", "[badjson]")]
    )
    client.force_login(lead)
    text = client.get(reverse("job_detail", args=[study.slug, job.pk])).text
    assert "Split proposals from the LLM, 2 conversations" in text
    assert (
        "2 split points and 0 dropped turns proposed for 1 of 2 conversations asked "
        "(1 answered, 0 from the call cache); 0 skipped, 1 problem." in text
    )
    assert "Answers that could not be used (1)" in text
    assert "<code>b: the answer is not JSON" in text
