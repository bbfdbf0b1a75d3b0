"""The `llm-annotate` judge (issue 22, point 3): one model call per card, asking for the
study's taxonomy on it, with evidence quotes.

- Messages: the system prompt (annotation/judges/prompts/llm_annotate.txt, or the run's
  own), then the taxonomy (per axis its types with definitions and examples); the user
  message is the conversation up to the card (earlier turns as context, the oldest cut
  first past MAX_CONTEXT_CHARS), the card last and marked.
- Answer: a JSON schema with one property per axis of the taxonomy, each a list of
  {type (an enum of the axis's codes), score 0-1, quotes}. A type the answer leaves out
  scores 0.
- Quotes: each is looked for in the stored text of the turns sent (the card and its
  context), exactly, then with whitespace normalised; one found in neither is dropped and
  counted. The evidence kept names the turns the quotes were found in.

`estimate_tokens` is the dry run's arithmetic: characters / CHARS_PER_TOKEN for the prompt,
plus EXPECTED_COMPLETION_TOKENS for the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from taxonomy.models import TaxonomyVersion

PROMPT_FILE = Path(__file__).parent / "prompts" / "llm_annotate.txt"
MAX_CONTEXT_CHARS = 24_000  # the earlier turns sent with a card, the latest kept
MAX_CARD_CHARS = 16_000  # the card's own user message and reply, each cut past it
MAX_QUOTES = 5  # per type
MAX_QUOTE_CHARS = 500
MAX_ANSWER_TOKENS = 2000
CHARS_PER_TOKEN = 4
EXPECTED_COMPLETION_TOKENS = 150
SCHEMA_NAME = "card_labels"


def default_prompt() -> str:
    return PROMPT_FILE.read_text(encoding="utf-8")


@dataclass(frozen=True)
class TurnText:
    index: int
    user: str
    reply: str


@dataclass(frozen=True)
class TaxonomyText:
    """What the model is told of a taxonomy version: its text, and per axis its codes."""

    text: str
    axes: dict[str, list[str]]  # axis code -> type codes

    @classmethod
    def of(cls, version: TaxonomyVersion) -> TaxonomyText:
        axes: dict[str, list[str]] = {}
        lines = [f"Taxonomy: {version.taxonomy.name}"]
        current = None
        for t in version.type_list():
            if t.axis.code != current:
                current = t.axis.code
                lines.append(f"\nAxis {t.axis.code} ({t.axis.name}; {t.axis.rule}):")
            axes.setdefault(t.axis.code, []).append(t.code)
            lines.append(f"- {t.code}: {t.name}. {t.definition.strip()}")
            if t.example.strip():
                lines.append(f"  Example: {t.example.strip()}")
        return cls("\n".join(lines), axes)

    def schema(self) -> dict:
        """One property per axis: the types it shows, each with a score and quotes."""
        properties = {}
        for axis, codes in self.axes.items():
            item = {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": codes},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "quotes": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["type", "score", "quotes"],
                "additionalProperties": False,
            }
            properties[axis] = {"type": "array", "items": item}
        return {
            "type": "object",
            "properties": properties,
            "required": list(self.axes),
            "additionalProperties": False,
        }


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def context_of(turns: list[TurnText], limit: int = MAX_CONTEXT_CHARS) -> list[TurnText]:
    """The earlier turns sent with a card: the latest ones whose texts fit in `limit`."""
    kept, used = [], 0
    for turn in reversed(turns):
        size = len(turn.user) + len(turn.reply)
        if used + size > limit:
            break
        kept.append(turn)
        used += size
    return kept[::-1]


def messages_for(prompt: str, taxonomy: TaxonomyText, card: TurnText, context: list[TurnText]):
    parts = []
    for turn in context:
        parts.append(f"--- Turn {turn.index} (context) ---\nUSER:\n{turn.user}\n")
        parts.append(f"ASSISTANT:\n{turn.reply}\n")
    parts.append(f"=== Turn {card.index}: THE CARD TO LABEL ===\nUSER:\n")
    parts.append(_cut(card.user, MAX_CARD_CHARS) + "\n")
    parts.append("ASSISTANT:\n" + _cut(card.reply, MAX_CARD_CHARS) + "\n")
    return [
        {"role": "system", "content": f"{prompt.strip()}\n\n{taxonomy.text}"},
        {"role": "user", "content": "".join(parts)},
    ]


def estimate_tokens(prompt_chars: int, context_chars: int, card_chars: int) -> int:
    """The prompt tokens of one card's request, estimated from its characters."""
    framing = 120  # turn headers and the card's marker
    return (prompt_chars + context_chars + card_chars + framing) // CHARS_PER_TOKEN + 1


_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass
class Verified:
    quotes: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    dropped: int = 0


def verify_quotes(quotes: list[str], turns: list[TurnText]) -> Verified:
    """The quotes found in the turns' stored text (exactly, else with whitespace
    normalised), with the turns they were found in; the rest dropped and counted."""
    out = Verified()
    squashed = None
    for quote in quotes[:MAX_QUOTES]:
        quote = quote[:MAX_QUOTE_CHARS]
        if not quote.strip():
            out.dropped += 1
            continue
        where = next((t.index for t in turns if quote in t.user or quote in t.reply), None)
        if where is None:
            if squashed is None:
                squashed = [(t.index, _squash(t.user), _squash(t.reply)) for t in turns]
            needle = _squash(quote)
            where = next((i for i, u, r in squashed if needle in u or needle in r), None)
        if where is None:
            out.dropped += 1
            continue
        out.quotes.append(quote)
        if where not in out.turns:
            out.turns.append(where)
    out.dropped += max(0, len(quotes) - MAX_QUOTES)
    return out


@dataclass
class CardScores:
    """A card's answer as scores: {type code: (score, evidence)}, and the quotes dropped."""

    scores: dict[str, tuple[float, dict]]
    quotes_dropped: int


def read_answer(data: dict, taxonomy: TaxonomyText, turns: list[TurnText]) -> CardScores:
    """Every type of the taxonomy with its score (0 for one the answer left out; the
    highest when a type is listed twice) and its verified evidence."""
    scores: dict[str, tuple[float, dict]] = {}
    dropped = 0
    for axis, codes in taxonomy.axes.items():
        for code in codes:
            scores[code] = (0.0, {"turns": [], "quotes": [], "detail": "not listed"})
        for item in data.get(axis, []):
            code, score = item["type"], min(1.0, max(0.0, float(item["score"])))
            if code not in scores or (scores[code][1]["detail"] == "" and scores[code][0] >= score):
                continue
            found = verify_quotes(list(item.get("quotes", [])), turns)
            dropped += found.dropped
            evidence = {"turns": found.turns, "quotes": found.quotes, "detail": ""}
            scores[code] = (score, evidence)
    return CardScores(scores, dropped)
