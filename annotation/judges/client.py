"""The model client (issue 22, point 1): the one way the tool asks a model, any
OpenAI-compatible chat completions endpoint, through the openai SDK. Splitting uses it
(annotation/intake/llm.py), and so will the judges.

- Endpoint: base URL, model, API key, timeout, retries and requests per minute, from the
  settings (CARDSORT_LLM_*); a job may name another model. Without a key no Authorization
  header is sent (a local server needs none).
- Retries: an answer HTTP 429 or 5xx, or a connection that failed, is asked again, up to
  `retries` times: after what the endpoint's Retry-After (or retry-after-ms) says, at most
  MAX_WAIT seconds, else after 1, 2, 4, ... seconds (at most MAX_BACKOFF, with jitter). A
  timeout is not retried: the same request would take as long again. The SDK's own retries
  are off, so every attempt counts against the rate.
- Rate: at most `rpm` requests per calendar minute to one endpoint, counted in the cache
  (settings.CACHES: with CACHE_URL one Redis shared by every web process and worker).
- Answer form: given a JSON schema, the request asks for it (response_format json_schema,
  strict); an endpoint that refuses that (HTTP 400 or 422) is asked in JSON mode
  (json_object, the schema given in the system message), then as plain text. The form that
  worked is remembered per endpoint and model for a day. The answer is parsed (a Markdown
  code fence is taken off) and validated against the schema: BadAnswer says where not.
- Cache: an answer that passed is kept (ModelCall) under the SHA-256 of the canonical
  request (endpoint, model, messages, temperature, seed, schema, max_tokens): the same
  request again is answered from the database without an HTTP call, so a re-run, or a job
  resumed after its worker died, costs nothing for what was asked before.
- Bounds: an answer body larger than MAX_ANSWER_BYTES is refused while it is read.

Tests never touch a network: they set TRANSPORT (an httpx2.MockTransport)."""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import httpx2
import jsonschema
import openai
from django.conf import settings
from django.core.cache import cache

from ..models import ModelCall

# the HTTP transport under the SDK; None: the network. Tests set an httpx2.MockTransport.
TRANSPORT: httpx2.BaseTransport | None = None

MAX_ANSWER_BYTES = 1_000_000
MAX_WAIT = 120.0  # the longest Retry-After honoured, in seconds
MAX_BACKOFF = 30.0
MODE_TTL = 24 * 3600
SCHEMA, JSON_MODE, TEXT = "json_schema", "json_object", "text"
MODES = (SCHEMA, JSON_MODE, TEXT)
SETTINGS = ("CARDSORT_LLM_BASE_URL", "CARDSORT_LLM_MODEL")


class ModelError(Exception):
    """The endpoint could not be asked, or gave no usable answer (the message says which;
    never the API key). `status`: the HTTP status it answered, if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class BadAnswer(ModelError):
    """The model answered, but not the JSON asked for."""


class _TooLarge(httpx2.TransportError):
    """An answer body over MAX_ANSWER_BYTES (a transport error: the SDK passes it on)."""

    def __init__(self) -> None:
        super().__init__("the answer is too large")


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 60
    retries: int = 4
    rpm: int = 0  # requests per minute; 0: no limit

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    @classmethod
    def from_settings(cls, model: str = "") -> Endpoint | None:
        """The configured endpoint (with `model` instead of the configured one, if given), or
        None while the settings leave the feature off."""
        if missing_settings(model):
            return None
        return cls(
            base_url=settings.CARDSORT_LLM_BASE_URL,
            model=model or settings.CARDSORT_LLM_MODEL,
            api_key=settings.CARDSORT_LLM_API_KEY,
            timeout=settings.CARDSORT_LLM_TIMEOUT,
            retries=settings.CARDSORT_LLM_RETRIES,
            rpm=settings.CARDSORT_LLM_RPM,
        )


def missing_settings(model: str = "") -> list[str]:
    """The settings the model client still needs ([] when it can ask): a base URL, and a
    model unless `model` names one."""
    return [
        name
        for name in SETTINGS
        if not getattr(settings, name, "") and not (name == "CARDSORT_LLM_MODEL" and model)
    ]


@dataclass(frozen=True)
class Answer:
    text: str
    data: Any  # the parsed JSON (None for an answer asked without a schema)
    mode: str
    cached: bool
    digest: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def canonical_request(
    endpoint: Endpoint,
    messages: list[dict],
    *,
    schema: dict | None,
    temperature: float,
    seed: int | None,
    max_tokens: int | None,
) -> dict:
    """What determines an answer: the call cache's key is its digest."""
    return {
        "endpoint": endpoint.base_url.rstrip("/"),
        "model": endpoint.model,
        "messages": messages,
        "temperature": float(temperature),
        "seed": seed,
        "schema": schema,
        "max_tokens": max_tokens,
    }


def digest_of(data: Any) -> str:
    """SHA-256 of `data` as canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# -- the answer -------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def snippet(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


@lru_cache(maxsize=32)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    return jsonschema.validators.validator_for(schema)(schema)


def parse(text: str, schema: dict) -> Any:
    """The JSON of an answer (in a Markdown code fence or not), valid under `schema`;
    BadAnswer naming where it is not."""
    fenced = _FENCE.match(text.strip())
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise BadAnswer(f"the answer is not JSON ({exc}): {snippet(text)}") from None
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        raise BadAnswer(
            f"the answer does not follow the schema at {where.lstrip('.') or 'the top'}: "
            f"{snippet(error.message, 120)}: {snippet(text)}"
        )
    return data


# -- HTTP -------------------------------------------------------------------------------------


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, stream, limit: int):
        self.stream, self.limit = stream, limit

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self.stream:
            read += len(chunk)
            if read > self.limit:
                raise _TooLarge()
            yield chunk

    def close(self) -> None:
        self.stream.close()


class _CappedTransport(httpx2.BaseTransport):
    """The transport, refusing an answer body over `limit` bytes as it is read."""

    def __init__(self, inner: httpx2.BaseTransport, limit: int):
        self.inner, self.limit = inner, limit

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            response.close()
            raise _TooLarge()
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self.limit),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


def _retry_after(headers) -> float | None:
    """The seconds an answer asks to wait (retry-after-ms, retry-after: seconds or a date)."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            pass
        if name == "retry-after" and (when := email.utils.parsedate_tz(value)) is not None:
            return max(0.0, email.utils.mktime_tz(when) - time.time())
    return None


class RateLimit:
    """At most `rpm` requests per calendar minute under `key`, counted in the cache, so
    every process sharing it (Redis in production) shares the limit; 0: no limit."""

    def __init__(self, key: str, rpm: int, clock: Callable[[], float], sleep):
        self.key, self.rpm, self.clock, self.sleep = key, rpm, clock, sleep

    def acquire(self) -> None:
        while self.rpm > 0:
            now = self.clock()
            minute = int(now // 60)
            key = f"{self.key}:{minute}"
            cache.add(key, 0, timeout=120)
            try:
                n = cache.incr(key)
            except ValueError:  # expired between add and incr: count again
                continue
            if n <= self.rpm:
                return
            self.sleep(60 * (minute + 1) - now + 0.01)


def _sleep(seconds: float) -> None:
    """How the client waits (a retry, the rate): tests swap it for one that does not."""
    time.sleep(seconds)


class ModelClient:
    """Asks one endpoint (see the module's docstring). `sleep`, `clock` and `rng` are the
    waits' and the rate's, swapped in tests. `calls`: HTTP requests made; `cached`: answers
    from the call cache."""

    def __init__(self, endpoint: Endpoint, *, sleep=None, clock=time.time, rng=None):
        self.endpoint = endpoint
        self.sleep, self.rng = sleep or _sleep, rng or random.Random()
        self.calls = self.cached = 0
        self.rate = RateLimit(f"cardsort:llm:rpm:{endpoint.base_url}", endpoint.rpm, clock, sleep)
        inner = TRANSPORT if TRANSPORT is not None else httpx2.HTTPTransport()
        self._http = httpx2.Client(transport=_CappedTransport(inner, MAX_ANSWER_BYTES))
        self._sdk = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key or "no-key",  # the SDK wants one; none is sent then
            timeout=endpoint.timeout,
            max_retries=0,
            http_client=self._http,
        )
        self._headers = {} if endpoint.api_key else {"Authorization": openai.Omit()}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ask(
        self,
        messages: list[dict],
        *,
        schema: dict | None = None,
        schema_name: str = "answer",
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Answer:
        """The model's answer to `messages` (parsed and validated when `schema` is given);
        from the call cache when the same request was answered before. ModelError when
        the endpoint gives no usable answer."""
        request = canonical_request(
            self.endpoint,
            messages,
            schema=schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        digest = digest_of(request)
        kept = ModelCall.objects.filter(digest=digest).first()
        if kept is not None:
            self.cached += 1
            data = parse(kept.response, schema) if schema is not None else None
            return Answer(
                kept.response, data, kept.mode, True, digest, kept.prompt_tokens,
                kept.completion_tokens,
            )  # fmt: skip
        options = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        completion, mode = self._complete(messages, schema, schema_name, options)
        text, usage = self._content(completion), getattr(completion, "usage", None)
        data = parse(text, schema) if schema is not None else None
        tokens = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        ModelCall.objects.get_or_create(
            digest=digest,
            defaults={
                "model": self.endpoint.model[:200],
                "host": self.endpoint.host[:255],
                "mode": mode,
                "response": text,
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
            },
        )
        return Answer(text, data, mode, False, digest, *tokens)

    # -- the answer's form: json_schema, else JSON mode, else text ----------------------------

    def _mode_key(self) -> str:
        return f"cardsort:llm:mode:{digest_of([self.endpoint.base_url, self.endpoint.model])}"

    def _complete(self, messages, schema, name, options):
        if schema is None:
            return self._send(self._body(messages, None, name, TEXT, options)), TEXT
        remembered = cache.get(self._mode_key(), SCHEMA)
        modes = MODES[MODES.index(remembered) if remembered in MODES else 0 :]
        first: ModelError | None = None
        for mode in modes:
            try:
                completion = self._send(self._body(messages, schema, name, mode, options))
            except ModelError as exc:
                if mode == TEXT or exc.status not in (400, 422):
                    raise
                first = first or exc
                continue
            if mode != remembered:
                cache.set(self._mode_key(), mode, MODE_TTL)
            return completion, mode
        raise first  # pragma: no cover - the loop ends in TEXT, which raises or returns

    def _body(self, messages, schema, name, mode, options) -> dict:
        body: dict[str, Any] = {"model": self.endpoint.model, "messages": messages}
        body.update({k: v for k, v in options.items() if v is not None})
        if mode == SCHEMA:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        elif schema is not None:
            body["messages"] = _with_schema(messages, schema)
            if mode == JSON_MODE:
                body["response_format"] = {"type": "json_object"}
        return body

    # -- one request, with retries --------------------------------------------------------------

    def _send(self, body: dict):
        url = self.endpoint.url
        for attempt in range(self.endpoint.retries + 1):
            last = attempt == self.endpoint.retries
            self.rate.acquire()
            self.calls += 1
            try:
                return self._sdk.chat.completions.create(**body, extra_headers=self._headers)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if (status == 429 or status >= 500) and not last:
                    wait = _retry_after(exc.response.headers)
                    self.sleep(min(MAX_WAIT, wait) if wait is not None else self._backoff(attempt))
                    continue
                detail = _detail(exc.body) or snippet(exc.response.text)
                raise ModelError(
                    f"{url} answered HTTP {status}" + (f": {detail}" if detail else ""), status
                ) from None
            except openai.APITimeoutError:
                raise ModelError(
                    f"{url} gave no answer within {self.endpoint.timeout:g} s"
                ) from None
            except openai.APIConnectionError as exc:
                if isinstance(exc.__cause__, _TooLarge):
                    raise ModelError(f"{url} answered more than {MAX_ANSWER_BYTES} bytes") from None
                if not last:
                    self.sleep(self._backoff(attempt))
                    continue
                raise ModelError(f"cannot reach {url}: {exc.__cause__ or exc}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        return min(MAX_BACKOFF, 2.0**attempt) * (0.5 + self.rng.random() / 2)

    def _content(self, completion) -> str:
        try:
            content = completion.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise ModelError(
                f"{self.endpoint.url} did not answer as a chat completions endpoint does "
                f"(choices[0].message.content): {snippet(_dump(completion))}"
            )
        return content


def _with_schema(messages: list[dict], schema: dict) -> list[dict]:
    """`messages` with the schema in the (first) system message: JSON mode has no other
    place for it."""
    note = (
        "Answer with one JSON object, nothing else, that follows this JSON schema: "
        + json.dumps(schema, separators=(",", ":"))
    )
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def _detail(body) -> str:
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or ""
        return snippet(message if isinstance(message, str) else json.dumps(message), 500)
    return snippet(body, 500) if isinstance(body, str) else ""


def _dump(completion) -> str:
    try:
        return json.dumps(completion.model_dump(exclude_unset=True))
    except Exception:  # noqa: BLE001 - only for the message
        return repr(completion)
