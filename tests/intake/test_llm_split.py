"""LLM split proposals against a local fake OpenAI-compatible server (http.server in a
thread): good JSON, JSON in a code fence, bad JSON, points out of range, HTTP 500, a reply
slower than the timeout. The job runs eagerly; a bad answer is reported for its
conversation and never stops the others."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotation.intake import llm
from annotation.models import Job, JobKind, JobStatus, SplitProposal, Turn
from annotation.tasks import run_split_proposals
from tests.factories import make_conversation

pytestmark = pytest.mark.django_db

TIMEOUT = 1

# what the fake model answers, by the marker in the conversation's first user message
ANSWERS = {
    "[good]": json.dumps(
        {
            "splits": [
                {"before_turn": 3, "reason": "The user moves from sorting to a web scraper."},
                {"before_turn": 5, "reason": "Now a SQL question."},
            ]
        }
    ),
    "[fenced]": '```json\n{"splits": [{"before_turn": 2, "reason": "new task"}]}\n```',
    "[none]": '{"splits": []}',
    "[badjson]": "Sure! The topic changes at turn 3.",
    "[range]": json.dumps(
        {
            "splits": [
                {"before_turn": 1},
                {"before_turn": 9},
                {"before_turn": "x"},
                {"before_turn": 4},
            ]
        }
    ),
}


class FakeLLM(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeLLM.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        prompt = body["messages"][-1]["content"]
        if "[500]" in prompt:
            self._send(500, b'{"error": {"message": "model overloaded"}}')
            return
        if "[slow]" in prompt:
            time.sleep(TIMEOUT + 1)
        if "[envelope]" in prompt:
            self._send(200, b'{"object": "error"}')
            return
        content = next((a for marker, a in ANSWERS.items() if marker in prompt), '{"splits": []}')
        answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the slow case)


@pytest.fixture
def fake_llm(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeLLM)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeLLM.requests = []
    settings.CARDSORT_LLM_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1/"
    settings.CARDSORT_LLM_MODEL = "fake-model"
    settings.CARDSORT_LLM_API_KEY = "sk-test-key"
    settings.CARDSORT_LLM_TIMEOUT = TIMEOUT
    yield server
    server.shutdown()
    server.server_close()


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


def test_it_stores_the_proposed_points_as_open_proposals(study, lead, fake_llm):
    good = conversation(study, "good", "[good]")
    job = run_job(study, lead, [good])

    assert job.status == JobStatus.DONE, job.error
    assert job.progress == job.total == 1
    rows = list(SplitProposal.objects.filter(conversation=good))
    assert [(p.turn_index, p.status, p.source, p.job_id) for p in rows] == [
        (3, "open", "llm", job.pk),
        (5, "open", "llm", job.pk),
    ]
    assert rows[0].reason == "The user moves from sorting to a web scraper."
    assert job.result["proposals"] == 2 and job.result["errors"] == []
    # the request: the configured endpoint, model and key
    (request,) = FakeLLM.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test-key"
    assert request["body"]["model"] == "fake-model"
    assert "### Turn 6" in request["body"]["messages"][-1]["content"]


def test_bad_answers_are_reported_per_conversation_and_the_job_goes_on(study, lead, fake_llm):
    cs = [
        conversation(study, "bad-json", "[badjson]"),
        conversation(study, "server-error", "[500]"),
        conversation(study, "slow", "[slow]"),
        conversation(study, "not-chat", "[envelope]"),
        conversation(study, "out-of-range", "[range]", n_turns=5),
        conversation(study, "fenced", "[fenced]"),
        conversation(study, "one-topic", "[none]"),
    ]
    job = run_job(study, lead, cs)

    assert job.status == JobStatus.DONE, job.error
    errors = job.result["errors"]
    assert any(e.startswith("bad-json: the answer is not JSON") for e in errors)
    assert any(e.startswith("server-error: ") and "HTTP 500" in e for e in errors)
    assert any("overloaded" in e for e in errors)
    assert any(e.startswith("slow: ") and f"no answer within {TIMEOUT} s" in e for e in errors)
    assert any(e.startswith("not-chat: ") and "choices[0].message.content" in e for e in errors)
    assert "out-of-range: split 1: before_turn 1 is not a turn from 2 to 5" in errors
    assert "out-of-range: split 2: before_turn 9 is not a turn from 2 to 5" in errors
    assert "out-of-range: split 3: before_turn 'x' is not a turn number" in errors
    assert not any("sk-test-key" in e for e in errors)
    # the good points of every answer were kept
    kept = SplitProposal.objects.order_by("conversation__external_id")
    assert [(p.conversation.external_id, p.turn_index) for p in kept] == [
        ("fenced", 2),
        ("out-of-range", 4),
    ]
    assert job.result["asked"] == 7 and job.result["answered"] == 3


def test_the_job_fails_when_no_conversation_gets_an_answer(study, lead, fake_llm):
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


def test_a_server_that_is_not_there_is_an_error_per_conversation(study, lead, settings):
    settings.CARDSORT_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # discard port: refused
    settings.CARDSORT_LLM_MODEL = "m"
    job = run_job(study, lead, [conversation(study, "g", "[good]")])
    assert job.status == JobStatus.FAILED
    assert "cannot reach http://127.0.0.1:9/v1/chat/completions" in job.error


def test_it_skips_what_cannot_be_split_without_asking(study, lead, fake_llm):
    from annotation.intake.splitting import split

    one = conversation(study, "one", "[good]", n_turns=1)
    original = conversation(study, "orig", "[good]", n_turns=4)
    parts = split(original, [3])
    job = run_job(study, lead, [one, original, parts[0]])
    assert FakeLLM.requests == []
    assert job.result["skipped"] == [
        "one: one turn: nothing to split",
        "orig: already split",
        "orig#1: a part of a split conversation",
    ]


def test_asking_again_replaces_open_proposals_and_respects_dismissed_ones(study, lead, fake_llm):
    good = conversation(study, "good", "[good]")
    run_job(study, lead, [good])
    SplitProposal.objects.filter(turn_index=5).update(status="dismissed")
    run_job(study, lead, [good])
    rows = SplitProposal.objects.filter(conversation=good).order_by("turn_index", "status")
    assert [(p.turn_index, p.status) for p in rows] == [(3, "open"), (5, "dismissed")]


def test_long_conversations_are_cut_to_the_documented_bound(study, fake_llm):
    long = make_conversation(study, "long", n_turns=200)
    Turn.objects.filter(conversation=long).update(user_text="u" * 5000, reply_text="r" * 5000)
    messages = llm.messages_for(long)
    prompt = messages[-1]["content"]
    assert len(prompt) < llm.PROMPT_CHARS * 1.5  # the bound, plus headings and cut marks
    user_chars, reply_chars = llm.bounds(200)
    assert ("u" * user_chars + "[... ") in prompt and "u" * (user_chars + 1) not in prompt
    assert "### Turn 200" in prompt
    # a short conversation is sent whole
    short = make_conversation(study, "short", n_turns=2)
    assert "[... " not in llm.messages_for(short)[-1]["content"]


@pytest.mark.parametrize(
    "answer, points, problems",
    [
        ('{"splits": [{"before_turn": 2, "reason": "x"}]}', {2: "x"}, 0),
        ("[3, 2, 3]", {3: "", 2: ""}, 0),
        ('{"splits": [{"before_turn": true}]}', {}, 1),
        ('{"splits": [{"before_turn": 2.5}]}', {}, 1),
        ('{"splits": [{"reason": "no number"}]}', {}, 1),
    ],
)
def test_parse_points(answer, points, problems):
    found = llm.parse_points(answer, 4)
    assert found.points == points
    assert len(found.problems) == problems


@pytest.mark.parametrize("answer", ["", "nope", '{"splits": 3}', '"text"', "{"])
def test_parse_points_refuses_what_is_not_the_json_asked_for(answer):
    with pytest.raises(llm.BadAnswer):
        llm.parse_points(answer, 4)


def test_the_job_partial_shows_the_summary_and_each_unusable_answer(client, study, lead, fake_llm):
    from django.urls import reverse

    job = run_job(
        study, lead, [conversation(study, "good", "[good]"), conversation(study, "b", "[badjson]")]
    )
    client.force_login(lead)
    text = client.get(reverse("job_detail", args=[study.slug, job.pk])).text
    assert "Split proposals from the LLM, 2 conversations" in text
    assert "2 split points proposed for 1 of 2 conversations asked; 0 skipped, 1 problem." in text
    assert "Answers that could not be used (1)" in text
    assert "<code>b: the answer is not JSON" in text
