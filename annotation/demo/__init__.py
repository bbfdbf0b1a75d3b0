"""Demo conversations for `manage.py demo`: 36 realistic multi-turn human-LLM coding chats,
twelve storylines in several programming languages, three variants each (ids demo-01a,
demo-01b, demo-01c, demo-02a, ...). Follow-ups exhibit the nine smells of the
interaction-smells preset, and many turns are clean.

Two data files beside this loader:
- `conversations.jsonl`: the native records (DESIGN.md: id, messages, metadata), one per
  line; the command imports this file as it is, through the real importer.
- `answer_key.json`: external id -> the smells each turn was written to show, one list per
  turn. It is kept out of the imported records on purpose: the card page shows conversation
  metadata, and an answer key there would unblind the annotators."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

DIR = Path(__file__).resolve().parent
CONVERSATIONS = DIR / "conversations.jsonl"
ANSWER_KEY = DIR / "answer_key.json"


@dataclass(frozen=True)
class DemoTurn:
    user: str
    reply: str
    smells: tuple[str, ...] = ()


@dataclass
class DemoConversation:
    external_id: str
    title: str
    language: str
    turns: list[DemoTurn] = field(default_factory=list)


def native_records() -> list[dict]:
    """The records of `conversations.jsonl`, in file order."""
    with CONVERSATIONS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def demo_conversations() -> list[DemoConversation]:
    """The demo conversations in file order, each turn with its smells from the answer key."""
    key: dict[str, list[list[str]]] = json.loads(ANSWER_KEY.read_text(encoding="utf-8"))
    conversations = []
    for record in native_records():
        messages = record["messages"]
        # user/assistant pairs; a key that does not match the turns is a broken data file
        pairs = list(zip(messages[0::2], messages[1::2], strict=True))
        smells = key[record["id"]]
        if len(smells) != len(pairs):
            raise ValueError(f"{ANSWER_KEY.name}: {record['id']} has {len(pairs)} turns")
        conversations.append(
            DemoConversation(
                external_id=record["id"],
                title=record["metadata"]["title"],
                language=record["metadata"]["language"],
                turns=[
                    DemoTurn(user["content"], reply["content"], tuple(codes))
                    for (user, reply), codes in zip(pairs, smells, strict=True)
                ],
            )
        )
    return conversations
