"""A fake OpenAI-compatible endpoint for the model client (annotation/judges/client.py): an
httpx2.MockTransport under the openai SDK, so no test touches a network. It records every
request's body and answers what `answer(body)` returns (a str: the model's message; a dict:
a JSON body; an httpx2.Response: as is). The `fake_model` fixture configures the settings,
installs the transport and makes the client's waits instant (recorded in `waits`)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
import pytest

BASE_URL = "http://llm.test/v1"


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 10) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FakeModel:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.urls: list[str] = []
        self.waits: list[float] = []
        self.answer: Callable[[dict], object] = lambda body: '{"splits": [], "drop_turns": []}'

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        self.urls.append(str(request.url))
        reply = self.answer(body)
        if isinstance(reply, httpx2.Response):
            return reply
        if isinstance(reply, str):
            reply = completion(reply)
        return httpx2.Response(200, json=reply)

    def last_prompt(self) -> str:
        return self.requests[-1]["messages"][-1]["content"]


@pytest.fixture
def fake_model(settings, monkeypatch) -> FakeModel:
    from annotation.judges import client

    fake = FakeModel()
    settings.CARDSORT_LLM_BASE_URL = BASE_URL
    settings.CARDSORT_LLM_MODEL = "fake-model"
    settings.CARDSORT_LLM_API_KEY = "sk-test-key"
    settings.CARDSORT_LLM_TIMEOUT = 5
    settings.CARDSORT_LLM_RETRIES = 3
    settings.CARDSORT_LLM_RPM = 0
    monkeypatch.setattr(client, "TRANSPORT", httpx2.MockTransport(fake.handler))
    monkeypatch.setattr(client, "_sleep", fake.waits.append)
    return fake
