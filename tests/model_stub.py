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


class StubServer:
    """A local OpenAI-compatible endpoint over real HTTP (http.server in a thread), for the
    tests that go through the whole stack (browser tests, a command end to end): POST
    <base_url>/chat/completions answers what `answer(body)` returns (a str: the model's
    message; a dict: a JSON body). `bodies` and `headers` record every request. Use it as
    a context manager; `base_url` is http://127.0.0.1:<port>/v1."""

    def __init__(self, answer: Callable[[dict], object] | None = None) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stub = self
        self.answer = answer or (lambda body: '{"splits": [], "drop_turns": []}')
        self.bodies: list[dict] = []
        self.headers: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append({"path": self.path, **body})
                stub.headers.append(dict(self.headers))
                reply = stub.answer(body)
                payload = json.dumps(completion(reply) if isinstance(reply, str) else reply)
                data = payload.encode()
                self.send_response(200 if self.path.endswith("/chat/completions") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
