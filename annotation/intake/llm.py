"""LLM split proposals (issue 10, point 3): ask any OpenAI-compatible chat completions
endpoint where a conversation changes topic, and keep its answer as SplitProposal rows for
the lead to apply or dismiss (splitting.py does the split).

Configuration (config/settings.py, from the environment): CARDSORT_LLM_BASE_URL (e.g.
https://api.openai.com/v1 or http://127.0.0.1:11434/v1; "/chat/completions" is added),
CARDSORT_LLM_MODEL, CARDSORT_LLM_API_KEY (sent as a Bearer token; optional, a local server
may need none), CARDSORT_LLM_TIMEOUT (seconds a request may take, default 60). Without a
base URL and a model the feature is off, and the pages say so.

What is sent, per conversation: the instructions (SYSTEM_PROMPT) and its turns, numbered,
each user message cut to USER_CHARS characters and each reply to REPLY_CHARS; when the
turns would still exceed PROMPT_CHARS in all, both bounds shrink alike (to no less than
MIN_USER_CHARS / MIN_REPLY_CHARS), so a long conversation costs a bounded request. A cut
text ends with "[... N characters cut]". Tool calls and the system prompt are not sent.

What is expected back: JSON, {"splits": [{"before_turn": k, "reason": "..."}]}, k a turn
from 2 to the last. A bare list of such objects is accepted, and so is JSON in a Markdown
code fence. An answer that is not JSON, a point that is not such a turn, an HTTP error or
a timeout is reported for that conversation, and the job goes on with the next one.

HTTP: urllib from the standard library, with the timeout; nothing else is installed."""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings

from ..models import Conversation, Job, SetAside, SplitProposal, Study

USER_CHARS = 1500
REPLY_CHARS = 700
PROMPT_CHARS = 60_000
MIN_USER_CHARS = 200
MIN_REPLY_CHARS = 100
# an answer larger than this is not a list of split points
MAX_ANSWER_BYTES = 1_000_000
ERRORS_SHOWN = 200

SYSTEM_PROMPT = (
    "You split conversations between a user and an AI coding assistant into single-topic "
    "conversations. A turn is one user message and the assistant's reply. A new topic "
    "starts at a turn where the user turns to a new, unrelated task (another program, "
    "problem or question), not where they refine, debug, extend or follow up on the "
    "current one. Answer with JSON only, in this form: "
    '{"splits": [{"before_turn": <the number of the turn where a new topic starts, '
    'from 2 to the last turn>, "reason": "<one short sentence>"}]}. '
    'Answer {"splits": []} when the whole conversation is about one topic.'
)

SETTINGS = ("CARDSORT_LLM_BASE_URL", "CARDSORT_LLM_MODEL")


class LLMError(Exception):
    """The endpoint could not be asked, or gave no usable answer (the message says which)."""


class BadAnswer(LLMError):
    """The model's answer is not the JSON asked for."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 60

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_settings(cls) -> LLMConfig | None:
        """The configured endpoint, or None when the feature is off."""
        if missing_settings():
            return None
        return cls(
            base_url=settings.CARDSORT_LLM_BASE_URL,
            model=settings.CARDSORT_LLM_MODEL,
            api_key=settings.CARDSORT_LLM_API_KEY,
            timeout=settings.CARDSORT_LLM_TIMEOUT,
        )


def missing_settings() -> list[str]:
    """The environment variables the feature still needs ([] when it is on)."""
    return [name for name in SETTINGS if not getattr(settings, name, "")]


def off_reason() -> str:
    """What the pages say while the feature is off ("" when it is on)."""
    missing = missing_settings()
    if not missing:
        return ""
    return (
        "LLM split proposals are off: set "
        + " and ".join(missing)
        + " (and CARDSORT_LLM_API_KEY if the endpoint needs one) in the environment of the "
        "web app and the worker, then restart them."
    )


# -- the request ------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[... {len(text) - limit} characters cut]"


def bounds(n_turns: int) -> tuple[int, int]:
    """The characters kept of each user message and each reply for a conversation of
    `n_turns` turns (see the module's docstring)."""
    user, reply = USER_CHARS, REPLY_CHARS
    if n_turns and n_turns * (user + reply) > PROMPT_CHARS:
        scale = PROMPT_CHARS / (n_turns * (user + reply))
        user = max(MIN_USER_CHARS, int(user * scale))
        reply = max(MIN_REPLY_CHARS, int(reply * scale))
    return user, reply


def messages_for(conversation: Conversation) -> list[dict]:
    """The chat messages that ask for `conversation`'s split points."""
    turns = list(
        conversation.turns.order_by("index").values_list("index", "user_text", "reply_text")
    )
    user_chars, reply_chars = bounds(len(turns))
    lines = [f"The conversation has {len(turns)} turns.", ""]
    for index, user_text, reply_text in turns:
        lines += [
            f"### Turn {index}",
            f"User: {_cut(user_text, user_chars)}",
            f"Assistant: {_cut(reply_text, reply_chars)}",
            "",
        ]
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n".join(lines)},
    ]


def complete(config: LLMConfig, messages: list[dict]) -> str:
    """The model's answer (the first choice's message content) to `messages`; LLMError
    naming what went wrong. The API key never appears in a message."""
    body = json.dumps({"model": config.model, "messages": messages, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(config.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=config.timeout) as response:
            raw = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace").strip()
        raise LLMError(
            f"{config.url} answered HTTP {exc.code} {exc.reason}"
            + (f": {detail}" if detail else "")
        ) from None
    except TimeoutError:
        raise LLMError(f"{config.url} gave no answer within {config.timeout:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise LLMError(f"{config.url} gave no answer within {config.timeout:g} s") from None
        raise LLMError(f"cannot reach {config.url}: {exc.reason}") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # reset, bad URL, cut off
        raise LLMError(f"cannot ask {config.url}: {exc}") from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise LLMError(f"{config.url} answered more than {MAX_ANSWER_BYTES} bytes")
    try:
        envelope = json.loads(raw)
        content = envelope["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(
            f"{config.url} did not answer as a chat completions endpoint does "
            f"(choices[0].message.content): {_snippet(raw.decode('utf-8', 'replace'))}"
        ) from None
    if not isinstance(content, str):
        raise LLMError(f"{config.url} answered no text (message content {content!r})")
    return content


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


# -- the answer -------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


@dataclass
class Points:
    """The valid split points of an answer (turn index -> reason) and what was wrong with
    the rest, one line each."""

    points: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_points(content: str, n_turns: int) -> Points:
    """The split points of the model's answer for a conversation of `n_turns` turns.
    BadAnswer when it is not the JSON asked for at all; a point that is not a turn from 2
    to `n_turns` (or has no number) is a problem line, and the other points still count."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadAnswer(f"the answer is not JSON ({exc}): {_snippet(content)}") from None
    items = data.get("splits") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise BadAnswer(f'the answer has no "splits" list of split points: {_snippet(content)}')
    found = Points()
    for i, item in enumerate(items, 1):
        turn = item.get("before_turn") if isinstance(item, dict) else item
        reason = item.get("reason", "") if isinstance(item, dict) else ""
        if isinstance(turn, bool) or not isinstance(turn, int):
            found.problems.append(f"split {i}: before_turn {turn!r} is not a turn number")
        elif not 2 <= turn <= n_turns:
            found.problems.append(
                f"split {i}: before_turn {turn} is not a turn from 2 to {n_turns}"
            )
        else:
            found.points.setdefault(turn, str(reason or "").strip())
    return found


# -- the job ----------------------------------------------------------------------------------


def not_proposable(conversation: Conversation) -> str:
    """Why `conversation` is not sent to the model ("" when it is)."""
    if conversation.set_aside == SetAside.SPLIT:
        return "already split"
    if conversation.split_from_id is not None:
        return "a part of a split conversation"
    if conversation.set_aside:
        return f"not in the study's set ({conversation.get_set_aside_display()})"
    if conversation.n_turns < 2:
        return "one turn: nothing to split"
    return ""


def store(conversation: Conversation, found: Points, job: Job | None) -> int:
    """Replace the conversation's open LLM proposals with `found`'s points (a point the
    lead dismissed before is not proposed again); returns the number stored."""
    proposals = SplitProposal.objects.filter(conversation=conversation)
    dismissed = set(
        proposals.filter(status=SplitProposal.Status.DISMISSED).values_list("turn_index", flat=True)
    )
    proposals.filter(source="llm", status=SplitProposal.Status.OPEN).delete()
    rows = [
        SplitProposal(conversation=conversation, turn_index=k, reason=reason, source="llm", job=job)
        for k, reason in sorted(found.points.items())
        if k not in dismissed
    ]
    SplitProposal.objects.bulk_create(rows)
    return len(rows)


def propose_splits(
    study: Study,
    conversation_ids: Iterable[int],
    config: LLMConfig,
    job: Job | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Ask for the split points of each conversation and store them (open proposals).
    Returns the job's result: counts, and one line per conversation that was skipped or
    whose answer could not be used (never raised: one bad answer stops nothing)."""
    ids = list(dict.fromkeys(int(i) for i in conversation_ids))
    found = {c.pk: c for c in Conversation.objects.filter(study=study, pk__in=ids)}
    result = {"conversations": len(ids), "asked": 0, "answered": 0, "proposals": 0}
    errors: list[str] = []
    skipped: list[str] = []
    for done, pk in enumerate(ids, 1):
        conversation = found.get(pk)
        if conversation is None:
            errors.append(f"conversation {pk}: not in this study")
        elif why := not_proposable(conversation):
            skipped.append(f"{conversation.external_id}: {why}")
        else:
            result["asked"] += 1
            name = conversation.external_id
            try:
                answer = complete(config, messages_for(conversation))
                points = parse_points(answer, conversation.n_turns)
            except LLMError as exc:
                errors.append(f"{name}: {exc}")
            else:
                result["answered"] += 1
                result["proposals"] += store(conversation, points, job)
                errors += [f"{name}: {problem}" for problem in points.problems]
        if progress is not None:
            progress(done, len(ids))
    result.update(
        errors=errors[:ERRORS_SHOWN],
        errors_not_shown=max(0, len(errors) - ERRORS_SHOWN),
        skipped=skipped[:ERRORS_SHOWN],
        summary=(
            f"{result['proposals']} split point{'s' if result['proposals'] != 1 else ''} "
            f"proposed for {result['answered']} of {result['asked']} conversation"
            f"{'s' if result['asked'] != 1 else ''} asked; {len(skipped)} skipped, "
            f"{len(errors)} problem{'s' if len(errors) != 1 else ''}"
        ),
    )
    return result
