"""LLM split proposals (issue 10, point 3; issue 20, point 3): ask a model where a
conversation changes topic and which of its turns belong to no topic of it, and keep the
answer as open SplitProposal rows for the lead to apply or dismiss (splitting.py splits;
split_run.py is the job that asks a whole study). The asking is the model client's
(annotation/judges/client.py: retries, rate, JSON schema, the call cache); it is configured
by CARDSORT_LLM_* (base URL and model required, key optional). Without them the feature is
off, and the pages say so.

What is sent, per conversation: the system prompt (SYSTEM_PROMPT, the zero-shot default, or
the lead's own); then each worked example as a user message (its turns, as below) and an
assistant message (its answer, as JSON); then the conversation's turns, numbered, each user
message cut to USER_CHARS characters and each reply to REPLY_CHARS; when the turns would
still exceed PROMPT_CHARS in all, both bounds shrink alike (to no less than MIN_USER_CHARS
/ MIN_REPLY_CHARS), so a long conversation costs a bounded request. A cut text ends with
"[... N characters cut]". Tool calls and the conversation's system prompt are not sent.

What is expected back (ANSWER_SCHEMA, asked as a JSON schema):
    {"splits": [{"before_turn": k, "reason": "..."}], "drop_turns": [j, ...]}
k a turn from 2 to the last (a new topic starts there), j a turn from 1 to the last that
belongs to no topic (dropped: in no part). An answer that does not follow the schema, an
HTTP error or a timeout is reported for that conversation; a point or a dropped turn out of
range is reported and the rest of the answer still counts.

Worked examples (`split_conversations --examples FILE`, the split page's file): UTF-8 JSONL,
one example a line (blank lines are skipped), at most MAX_EXAMPLES of them and
MAX_EXAMPLES_BYTES in all:
    {"turns": [{"user": "...", "assistant": "..."}, ...],
     "splits": [{"before_turn": 3, "reason": "..."}],
     "drop_turns": [2]}
`turns` at least one; `splits` a list (empty: one topic), its before_turn from 2 to the
number of turns, reason optional; `drop_turns` optional, each from 1 to the number of
turns. Every line that breaks a rule is reported as `file:line: field: why`, and nothing is
asked until the file is right."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..judges.client import digest_of, missing_settings
from ..models import Conversation, Job, SetAside, SplitProposal

USER_CHARS = 1500
REPLY_CHARS = 700
PROMPT_CHARS = 60_000
MIN_USER_CHARS = 200
MIN_REPLY_CHARS = 100
MAX_EXAMPLES = 100
MAX_EXAMPLES_BYTES = 2_000_000
MAX_PROMPT_CHARS = 50_000
MAX_ANSWER_TOKENS = 4096

SYSTEM_PROMPT = (
    "You split conversations between a user and an AI coding assistant into single-topic "
    "conversations. A turn is one user message and the assistant's reply. A new topic "
    "starts at a turn where the user turns to a new, unrelated task (another program, "
    "problem or question), not where they refine, debug, extend or follow up on the "
    "current one. Answer with JSON only, in this form: "
    '{"splits": [{"before_turn": <the number of the turn where a new topic starts, '
    'from 2 to the last turn>, "reason": "<one short sentence>"}], "drop_turns": '
    "[<the number of a turn that belongs to none of the conversation's topics, such as "
    'an unrelated question interleaved in another task>]}. Answer {"splits": [], '
    '"drop_turns": []} when the whole conversation is about one topic.'
)

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "splits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "before_turn": {"type": "integer"},
                    "reason": {"type": "string"},
                },
                "required": ["before_turn", "reason"],
                "additionalProperties": False,
            },
        },
        "drop_turns": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["splits", "drop_turns"],
    "additionalProperties": False,
}
SCHEMA_NAME = "split_points"


def off_reason(model: str = "") -> str:
    """What the pages say while the feature is off ("" when it is on)."""
    missing = missing_settings(model)
    if not missing:
        return ""
    return (
        "LLM split proposals are off: set "
        + " and ".join(missing)
        + " (and CARDSORT_LLM_API_KEY if the endpoint needs one) in the environment of the "
        "web app and the worker, then restart them."
    )


# -- the request ------------------------------------------------------------------------------


def _cut(text: str, limit: int, length: int | None = None) -> str:
    """`text` cut to `limit` characters; `length`: the full text's, when `text` is
    already a prefix of it."""
    length = len(text) if length is None else length
    if length <= limit:
        return text
    return f"{text[:limit]}[... {length - limit} characters cut]"


def bounds(n_turns: int) -> tuple[int, int]:
    """The characters kept of each user message and each reply for a conversation of
    `n_turns` turns (see the module's docstring)."""
    user, reply = USER_CHARS, REPLY_CHARS
    if n_turns and n_turns * (user + reply) > PROMPT_CHARS:
        scale = PROMPT_CHARS / (n_turns * (user + reply))
        user = max(MIN_USER_CHARS, int(user * scale))
        reply = max(MIN_REPLY_CHARS, int(reply * scale))
    return user, reply


@dataclass(frozen=True)
class TurnText:
    """A turn as it is sent: its texts, possibly only their first characters, with their
    full lengths."""

    index: int
    user: str
    reply: str
    user_length: int | None = None
    reply_length: int | None = None


def turns_text(turns: list[TurnText]) -> str:
    """The user message that shows the model a conversation's turns."""
    user_chars, reply_chars = bounds(len(turns))
    lines = [f"The conversation has {len(turns)} turns.", ""]
    for t in turns:
        lines += [
            f"### Turn {t.index}",
            f"User: {_cut(t.user, user_chars, t.user_length)}",
            f"Assistant: {_cut(t.reply, reply_chars, t.reply_length)}",
            "",
        ]
    return "\n".join(lines)


def messages_for(
    conversation: Conversation | list[TurnText],
    prompt: str = SYSTEM_PROMPT,
    examples: Iterable[dict] = (),
) -> list[dict]:
    """The chat messages that ask for a conversation's split points: the system prompt,
    the worked examples as user/assistant pairs, the conversation."""
    if isinstance(conversation, Conversation):
        rows = conversation.turns.order_by("index").values_list("index", "user_text", "reply_text")
        turns = [TurnText(*row) for row in rows]
    else:
        turns = conversation
    messages = [{"role": "system", "content": prompt}]
    for example in examples:
        shown = [TurnText(i, t["user"], t["assistant"]) for i, t in enumerate(example["turns"], 1)]
        answer = {"splits": example["splits"], "drop_turns": example["drop_turns"]}
        messages += [
            {"role": "user", "content": turns_text(shown)},
            {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)},
        ]
    messages.append({"role": "user", "content": turns_text(turns)})
    return messages


# -- worked examples ----------------------------------------------------------------------------


class ExamplesError(ValueError):
    """A worked examples file that cannot be used; `lines` says where and why, one
    `file:line: field: why` each."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
        super().__init__(lines[0] + more)


def _is_turn_number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _example(data) -> tuple[dict | None, list[tuple[str, str]]]:
    """A line's example, normalised, or the (field, why) of each rule it breaks."""
    if not isinstance(data, dict):
        return None, [("(line)", "an example is a JSON object with turns, splits, drop_turns")]
    errors = [
        (key, "unknown field (an example has turns, splits and drop_turns)")
        for key in data
        if key not in ("turns", "splits", "drop_turns")
    ]
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        errors.append(("turns", "missing, or not a list of at least one turn"))
        turns = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            errors.append((f"turns[{i}]", 'not an object {"user": ..., "assistant": ...}'))
            continue
        for key in ("user", "assistant"):
            if not isinstance(turn.get(key), str):
                errors.append((f"turns[{i}].{key}", "missing, or not a string"))
        errors += [
            (f"turns[{i}].{key}", "unknown field (a turn has user and assistant)")
            for key in turn
            if key not in ("user", "assistant")
        ]
    n = len(turns)
    splits = data.get("splits")
    if not isinstance(splits, list):
        errors.append(("splits", "missing, or not a list (an empty one: a single topic)"))
        splits = []
    out_splits = []
    for i, item in enumerate(splits):
        where = f"splits[{i}]"
        point = item.get("before_turn") if isinstance(item, dict) else None
        reason = item.get("reason", "") if isinstance(item, dict) else ""
        if not isinstance(item, dict):
            errors.append((where, 'not an object {"before_turn": k, "reason": "..."}'))
        elif not _is_turn_number(point):
            errors.append((f"{where}.before_turn", f"{point!r} is not a turn number"))
        elif n and not 2 <= point <= n:
            errors.append((f"{where}.before_turn", f"{point} is not a turn from 2 to {n}"))
        elif not isinstance(reason, str):
            errors.append((f"{where}.reason", "not a string"))
        else:
            out_splits.append({"before_turn": point, "reason": reason})
    drops = data.get("drop_turns", [])
    if not isinstance(drops, list):
        errors.append(("drop_turns", "not a list of turn numbers"))
        drops = []
    for i, turn in enumerate(drops):
        if not _is_turn_number(turn):
            errors.append((f"drop_turns[{i}]", f"{turn!r} is not a turn number"))
        elif n and not 1 <= turn <= n:
            errors.append((f"drop_turns[{i}]", f"{turn} is not a turn from 1 to {n}"))
    if errors:
        return None, errors
    example = {
        "turns": [{"user": t["user"], "assistant": t["assistant"]} for t in turns],
        "splits": out_splits,
        "drop_turns": list(drops),
    }
    return example, []


def read_examples(data: bytes, name: str) -> list[dict]:
    """The worked examples of a JSONL file's bytes (`name`: the file as the errors name
    it); ExamplesError with every line that breaks a rule (see the module's docstring)."""
    if len(data) > MAX_EXAMPLES_BYTES:
        raise ExamplesError(
            [f"{name}: {len(data)} bytes: a worked examples file has at most {MAX_EXAMPLES_BYTES}"]
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExamplesError(
            [f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"]
        ) from None
    examples, errors = [], []
    # lines end at "\n" only: a JSON string may hold U+2028 and the like, which splitlines() cuts
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except ValueError as exc:
            errors.append(f"{name}:{n}: (line): not JSON ({exc})")
            continue
        example, problems = _example(parsed)
        errors += [f"{name}:{n}: {where}: {why}" for where, why in problems]
        if example is not None:
            examples.append(example)
    if not errors and len(examples) > MAX_EXAMPLES:
        errors.append(f"{name}: {len(examples)} examples: at most {MAX_EXAMPLES} are sent")
    if not errors and not examples:
        errors.append(f"{name}: no example in the file")
    if errors:
        raise ExamplesError(errors)
    return examples


def examples_digest(examples: list[dict]) -> str:
    """The digest of a set of worked examples ("" for none), as the job and methods say it."""
    return digest_of(examples) if examples else ""


# -- the answer -------------------------------------------------------------------------------


@dataclass
class Points:
    """The usable split points (turn index -> reason) and dropped turns of an answer, and
    what was wrong with the rest, one line each."""

    points: dict[int, str] = field(default_factory=dict)
    drops: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_answer(data: dict, n_turns: int) -> Points:
    """The split points and dropped turns of an answer that follows ANSWER_SCHEMA, for a
    conversation of `n_turns` turns: one out of range is a problem line, the rest count."""
    found = Points()
    for i, item in enumerate(data["splits"], 1):
        turn = int(item["before_turn"])
        if not 2 <= turn <= n_turns:
            found.problems.append(
                f"split {i}: before_turn {turn} is not a turn from 2 to {n_turns}"
            )
        else:
            found.points.setdefault(turn, item["reason"].strip())
    drops = set()
    for i, raw in enumerate(data["drop_turns"], 1):
        turn = int(raw)
        if not 1 <= turn <= n_turns:
            found.problems.append(f"drop {i}: turn {turn} is not a turn from 1 to {n_turns}")
        else:
            drops.add(turn)
    if drops and len(drops) == n_turns:
        found.problems.append("drop_turns names every turn: not dropped")
        drops = set()
    found.drops = sorted(drops)
    return found


# -- storing ------------------------------------------------------------------------------------


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


def store(conversation: Conversation, found: Points, job: Job | None) -> tuple[int, int]:
    """Replace the conversation's open LLM proposals with `found`'s points and dropped
    turns (one the lead dismissed before is not proposed again); returns how many points
    and dropped turns were stored."""
    Kind, Status = SplitProposal.Kind, SplitProposal.Status
    proposals = SplitProposal.objects.filter(conversation=conversation)
    dismissed = set(proposals.filter(status=Status.DISMISSED).values_list("kind", "turn_index"))
    proposals.filter(source="llm", status=Status.OPEN).delete()
    rows = [
        SplitProposal(conversation=conversation, turn_index=k, reason=reason, job=job)
        for k, reason in sorted(found.points.items())
        if (Kind.SPLIT, k) not in dismissed
    ]
    n_points = len(rows)
    rows += [
        SplitProposal(conversation=conversation, turn_index=k, kind=Kind.DROP, job=job)
        for k in found.drops
        if (Kind.DROP, k) not in dismissed
    ]
    SplitProposal.objects.bulk_create(rows)
    return n_points, len(rows) - n_points
