"""The episode judges' messages and schemas (issue 22, point 3, on issue 21's episodes):

- `llm-extract`: one call per session with its whole transcript, turn-numbered, each turn's
  parts labelled (user, thinking, tool_call, tool_result, reply: the stored texts of
  annotation/episodes/parts.py, which the quotes are located in); the answer, a list of
  episodes {first_turn, last_turn, goal, confidence, evidence [{turn, part, quote}]}, goes
  through the episode import's checks (annotation/importers/episodes.py).
- `llm-validate`: one call per episode with its turns, goal and evidence; the answer
  {valid, invalid_reason (one of the study's reasons, annotation/episodes/reasons.py, or ""),
  rationale}.
- `llm-annotate --units episodes`: one call per episode with its turns, goal and evidence and
  the taxonomy (llm_annotate.TaxonomyText: one schema property per axis); its quotes are
  checked against the episode's turns (llm_annotate.verify_quotes).

A part's text is cut past MAX_PART_CHARS and a transcript past MAX_SESSION_CHARS (the
latest turns dropped, said in the transcript)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..episodes.parts import PARTS, texts_of
from ..episodes.reasons import INVALID_REASONS
from .llm_annotate import CHARS_PER_TOKEN, TurnText

PROMPTS = Path(__file__).parent / "prompts"
MAX_PART_CHARS = 12_000
MAX_SESSION_CHARS = 200_000
MAX_EPISODES = 50  # per session answer
EXPECTED_COMPLETION_TOKENS = {"llm-extract": 400, "llm-validate": 80, "llm-annotate": 150}
SCHEMA_NAMES = {"llm-extract": "session_episodes", "llm-validate": "episode_verdict"}


def default_prompt(judge: str) -> str:
    name = {"llm-extract": "llm_extract", "llm-validate": "llm_validate"}.get(
        judge, "llm_annotate_episode"
    )
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class SessionTurn:
    """A stored turn as the episode judges read it."""

    index: int
    user: str
    reply: str
    reply_parts: list

    def parts(self) -> list[tuple[str, int | None, str]]:
        """(part, part index, text) in reading order: user, the reply's parts, the reply."""
        out = [("user", None, self.user)]
        parts = [
            (i, kind, text)
            for kind in ("thinking", "tool_call", "tool_result")
            for i, text in texts_of(kind, "", "", self.reply_parts)
        ]
        out += [(kind, i, text) for i, kind, text in sorted(parts, key=lambda p: p[0])]
        out.append(("reply", None, self.reply))
        return [(p, i, t) for p, i, t in out if t]

    def as_quotable(self) -> TurnText:
        """One text per turn side for verify_quotes: the reply's parts with the reply."""
        extra = [t for p, _, t in self.parts() if p not in ("user", "reply")]
        return TurnText(self.index, self.user, "\n".join([*extra, self.reply]))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_PART_CHARS else text[:MAX_PART_CHARS] + " [...]"


def transcript(turns: list[SessionTurn]) -> str:
    """The turns as the model reads them: `=== Turn N ===`, then `[part]` (`[tool_call 1]`
    for a reply part, with its position) and its text."""
    out: list[str] = []
    used = 0
    for turn in turns:
        block = [f"=== Turn {turn.index} ==="]
        for part, index, text in turn.parts():
            label = part if index is None else f"{part} {index}"
            block.append(f"[{label}]\n{_cut(text)}")
        text = "\n".join(block) + "\n"
        if used + len(text) > MAX_SESSION_CHARS and out:
            out.append(f"[... the session goes on past turn {turn.index - 1}; cut here ...]\n")
            break
        out.append(text)
        used += len(text)
    return "\n".join(out)


def extract_schema() -> dict:
    evidence = {
        "type": "object",
        "properties": {
            "turn": {"type": "integer"},
            "part": {"type": "string", "enum": list(PARTS)},
            "quote": {"type": "string"},
        },
        "required": ["turn", "part", "quote"],
        "additionalProperties": False,
    }
    episode = {
        "type": "object",
        "properties": {
            "first_turn": {"type": "integer"},
            "last_turn": {"type": "integer"},
            "goal": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "evidence": {"type": "array", "items": evidence},
        },
        "required": ["first_turn", "last_turn", "goal", "confidence", "evidence"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"episodes": {"type": "array", "items": episode}},
        "required": ["episodes"],
        "additionalProperties": False,
    }


def validate_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "valid": {"type": "boolean"},
            "invalid_reason": {"type": "string", "enum": ["", *INVALID_REASONS]},
            "rationale": {"type": "string"},
        },
        "required": ["valid", "invalid_reason", "rationale"],
        "additionalProperties": False,
    }


def extract_messages(prompt: str, turns: list[SessionTurn]) -> list[dict]:
    return [
        {"role": "system", "content": prompt.strip()},
        {"role": "user", "content": "The session:\n\n" + transcript(turns)},
    ]


def episode_text(goal: str, first: int, last: int, evidence: list[dict]) -> str:
    quotes = "\n".join(
        f"- turn {e['turn']} {e['part']}: {json.dumps(e['quote'], ensure_ascii=False)}"
        for e in evidence
    )
    return (
        f"The episode: turns {first} to {last}.\nAlignment goal: {goal}\n"
        f"Evidence:\n{quotes or '(none)'}\n"
    )


def episode_messages(
    prompt: str, turns: list[SessionTurn], episode: str, taxonomy_text: str = ""
) -> list[dict]:
    system = prompt.strip() + (f"\n\n{taxonomy_text}" if taxonomy_text else "")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{episode}\nThe episode's turns:\n\n{transcript(turns)}"},
    ]


def estimate_tokens(chars: int) -> int:
    framing = 200
    return (chars + framing) // CHARS_PER_TOKEN + 1
