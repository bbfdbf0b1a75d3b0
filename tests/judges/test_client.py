"""The model client (issue 22, point 1) against a mock transport: what it sends, retries on
429/5xx honouring Retry-After, the shared requests-per-minute limit, the JSON schema with
its fallbacks (JSON mode, then text), validation of the answer, the call cache, and every
way an endpoint can fail, each said without the API key."""

from __future__ import annotations

import json

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.judges.client import (
    BadAnswer,
    Endpoint,
    ModelClient,
    ModelError,
    canonical_request,
    digest_of,
)
from annotation.models import ModelCall
from tests.model_stub import BASE_URL, completion

pytestmark = pytest.mark.django_db

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
ASK = [{"role": "system", "content": "Count."}, {"role": "user", "content": "one two"}]


def client() -> ModelClient:
    return ModelClient(Endpoint.from_settings())


def test_it_sends_the_model_messages_temperature_seed_and_schema(fake_model):
    fake_model.answer = lambda body: '{"n": 2}'
    answer = client().ask(ASK, schema=SCHEMA, schema_name="count", temperature=1.0, seed=7)

    assert answer.data == {"n": 2} and not answer.cached
    (body,) = fake_model.requests
    assert fake_model.urls == [f"{BASE_URL}/chat/completions"]
    assert body["model"] == "fake-model"
    assert body["messages"] == ASK
    assert body["temperature"] == 1.0 and body["seed"] == 7
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "count", "schema": SCHEMA, "strict": True},
    }
    assert fake_model.headers[0]["authorization"] == "Bearer sk-test-key"


def test_without_a_key_no_authorization_is_sent(fake_model, settings):
    settings.CARDSORT_LLM_API_KEY = ""
    client().ask(ASK)
    assert "authorization" not in fake_model.headers[0]
    assert "seed" not in fake_model.requests[0]  # not given: not sent


def test_it_retries_a_429_after_what_retry_after_says(fake_model):
    answers = iter(
        [
            httpx2.Response(429, headers={"Retry-After": "7"}, json={"error": {"message": "slow"}}),
            httpx2.Response(503, headers={"retry-after-ms": "250"}, json={}),
            completion('{"n": 1}'),
        ]
    )
    fake_model.answer = lambda body: next(answers)
    c = client()
    assert c.ask(ASK, schema=SCHEMA).data == {"n": 1}
    assert c.calls == 3
    assert fake_model.waits == [7.0, 0.25]


def test_a_retry_after_longer_than_the_cap_is_cut_to_it(fake_model):
    from annotation.judges import client as module

    answers = iter([httpx2.Response(429, headers={"Retry-After": "86400"}), completion("x")])
    fake_model.answer = lambda body: next(answers)
    client().ask(ASK)
    assert fake_model.waits == [module.MAX_WAIT]


def test_5xx_is_retried_with_growing_backoff_then_reported(fake_model, settings):
    settings.CARDSORT_LLM_RETRIES = 3
    fake_model.answer = lambda body: httpx2.Response(
        500, json={"error": {"message": "model overloaded"}}
    )
    c = client()
    with pytest.raises(ModelError) as caught:
        c.ask(ASK)
    assert c.calls == 4
    assert str(caught.value) == f"{BASE_URL}/chat/completions answered HTTP 500: model overloaded"
    assert caught.value.status == 500
    assert len(fake_model.waits) == 3
    for attempt, wait in enumerate(fake_model.waits):
        assert 2**attempt / 2 <= wait <= 2**attempt


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_client_error_is_not_retried(fake_model, status):
    fake_model.answer = lambda body: httpx2.Response(status, json={"error": {"message": "no"}})
    c = client()
    with pytest.raises(ModelError, match=f"HTTP {status}: no"):
        c.ask(ASK)
    assert c.calls == 1 and fake_model.waits == []


def test_a_refused_schema_falls_back_to_json_mode_and_that_is_remembered(fake_model):
    def answer(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return httpx2.Response(400, json={"error": {"message": "response_format unsupported"}})
        return '{"n": 3}'

    fake_model.answer = answer
    first = client().ask(ASK, schema=SCHEMA)
    assert first.data == {"n": 3} and first.mode == "json_object"
    refused, json_mode = fake_model.requests
    assert refused["response_format"]["type"] == "json_schema"
    assert json_mode["response_format"] == {"type": "json_object"}
    # JSON mode has the schema in the system message
    system = json_mode["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Count.\n\n")
    assert json.dumps(SCHEMA, separators=(",", ":")) in system["content"]
    # the next request (another client: another job) goes to JSON mode at once
    fake_model.requests.clear()
    client().ask([{"role": "user", "content": "three"}], schema=SCHEMA)
    assert [r["response_format"]["type"] for r in fake_model.requests] == ["json_object"]


def test_an_endpoint_refusing_json_mode_too_is_asked_for_text(fake_model):
    def answer(body):
        if "response_format" in body:
            return httpx2.Response(422, json={"detail": "unknown field response_format"})
        return 'Here: ```json\n{"n": 4}\n```'

    fake_model.answer = answer
    with pytest.raises(BadAnswer, match="not JSON"):  # prose around the fence: not JSON
        client().ask(ASK, schema=SCHEMA)
    fake_model.answer = lambda body: (
        httpx2.Response(422, json={}) if "response_format" in body else '```json\n{"n": 4}\n```'
    )
    answer = client().ask([{"role": "user", "content": "four"}], schema=SCHEMA)
    assert answer.data == {"n": 4} and answer.mode == "text"


def test_an_answer_that_breaks_the_schema_is_a_bad_answer_and_not_kept(fake_model):
    fake_model.answer = lambda body: '{"n": "two"}'
    with pytest.raises(BadAnswer, match="the answer does not follow the schema at n: 'two'"):
        client().ask(ASK, schema=SCHEMA)
    assert not ModelCall.objects.exists()
    fake_model.answer = lambda body: '{"n": 2}'
    assert client().ask(ASK, schema=SCHEMA).data == {"n": 2}  # asked again: not cached
    assert len(fake_model.requests) == 2


def test_the_same_request_again_is_answered_from_the_call_cache(fake_model):
    fake_model.answer = lambda body: '{"n": 2}'
    client().ask(ASK, schema=SCHEMA, temperature=1.0, seed=1)
    again = client()
    answer = again.ask(ASK, schema=SCHEMA, temperature=1.0, seed=1)
    assert answer.cached and answer.data == {"n": 2} and again.calls == 0
    assert len(fake_model.requests) == 1
    kept = ModelCall.objects.get()
    assert (kept.model, kept.host, kept.mode) == ("fake-model", "llm.test", "json_schema")
    assert (kept.prompt_tokens, kept.completion_tokens) == (100, 10)
    assert kept.digest == answer.digest
    # any parameter of the request changes the key
    for options in ({"seed": 2}, {"temperature": 0.0}, {"max_tokens": 5}, {"schema": None}):
        client().ask(ASK, **{"schema": SCHEMA, "temperature": 1.0, "seed": 1, **options})
    assert len(fake_model.requests) == 5


def test_another_model_is_another_request(fake_model):
    client().ask(ASK)
    ModelClient(Endpoint.from_settings(model="other-model")).ask(ASK)
    assert [r["model"] for r in fake_model.requests] == ["fake-model", "other-model"]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.waits: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_the_requests_per_minute_are_shared_by_every_client(fake_model, settings):
    """Two clients (two workers) share the count in the cache: the third request in a
    minute waits for the next one."""
    settings.CARDSORT_LLM_RPM = 2
    clock = Clock(60 * 1000 + 15.0)
    one, two = (
        ModelClient(Endpoint.from_settings(), clock=clock.time, sleep=clock.sleep) for _ in "12"
    )
    one.ask([{"role": "user", "content": "a"}])
    two.ask([{"role": "user", "content": "b"}])
    assert clock.waits == []
    one.ask([{"role": "user", "content": "c"}])
    assert len(clock.waits) == 1 and clock.waits[0] == pytest.approx(45.01)
    assert len(fake_model.requests) == 3


def test_a_timeout_is_reported_and_not_retried(fake_model):
    def slow(body):
        raise httpx2.ReadTimeout("timed out")

    fake_model.answer = slow
    c = client()
    with pytest.raises(ModelError, match=r"gave no answer within 5 s"):
        c.ask(ASK)
    assert c.calls == 1


def test_a_refused_connection_is_retried_then_reported(fake_model, settings):
    settings.CARDSORT_LLM_RETRIES = 2

    def refused(body):
        raise httpx2.ConnectError("connection refused")

    fake_model.answer = refused
    c = client()
    with pytest.raises(ModelError, match=f"cannot reach {BASE_URL}/chat/completions"):
        c.ask(ASK)
    assert c.calls == 3


def test_an_answer_too_large_is_refused_while_read(fake_model, monkeypatch):
    from annotation.judges import client as module

    monkeypatch.setattr(module, "MAX_ANSWER_BYTES", 1000)
    fake_model.answer = lambda body: completion("x" * 5000)
    c = client()
    with pytest.raises(ModelError, match="answered more than 1000 bytes"):
        c.ask(ASK)
    # no Content-Length: cut while the chunks come
    chunks = [json.dumps(completion("y" * 5000)).encode()[i : i + 100] for i in range(0, 5200, 100)]
    fake_model.answer = lambda body: httpx2.Response(200, content=iter(chunks))
    with pytest.raises(ModelError, match="answered more than 1000 bytes"):
        c.ask([{"role": "user", "content": "again"}])
    assert c.calls == 2  # not retried


@pytest.mark.parametrize("body", [{"object": "error"}, {"choices": []}, {"choices": [{}]}])
def test_an_answer_that_is_no_chat_completion_is_reported(fake_model, body):
    fake_model.answer = lambda request: body
    with pytest.raises(ModelError, match=r"choices\[0\]\.message\.content"):
        client().ask(ASK)


def test_no_error_says_the_api_key(fake_model):
    fake_model.answer = lambda body: httpx2.Response(401, json={"error": {"message": "bad key"}})
    with pytest.raises(ModelError) as caught:
        client().ask(ASK)
    assert "sk-test-key" not in str(caught.value)


def test_off_without_a_base_url_or_model(settings):
    settings.CARDSORT_LLM_BASE_URL, settings.CARDSORT_LLM_MODEL = "http://x/v1", ""
    assert Endpoint.from_settings() is None
    assert Endpoint.from_settings(model="m").model == "m"


@given(
    messages=st.lists(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "system"]), "content": st.text()}),
        min_size=1,
        max_size=4,
    ),
    temperature=st.floats(0, 2),
    seed=st.none() | st.integers(0, 2**31),
)
def test_the_cache_key_is_the_request_and_nothing_else(messages, temperature, seed):
    endpoint = Endpoint("http://h/v1", "m")
    key = dict(schema=SCHEMA, temperature=temperature, seed=seed, max_tokens=None)
    request = canonical_request(endpoint, messages, **key)
    reordered = [dict(reversed(list(m.items()))) for m in messages]
    assert digest_of(request) == digest_of(canonical_request(endpoint, reordered, **key))
    other = [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + "!"}]
    assert digest_of(request) != digest_of(canonical_request(endpoint, other, **key))
    assert digest_of(request) != digest_of(
        canonical_request(Endpoint("http://h/v1", "m2"), messages, **key)
    )
