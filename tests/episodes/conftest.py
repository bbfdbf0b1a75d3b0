"""An agent-misalignment study with two sessions whose turns hold user text, reply text and
reply parts (thinking, a tool call, a tool result) to quote from."""

from __future__ import annotations

import json

import pytest

from annotation.models import Conversation, Turn
from tests.factories import make_study

PARTS = [
    {"type": "thinking", "content": "The user wants the tests   fixed;\nI will delete them."},
    {"type": "tool_call", "name": "Bash", "arguments": {"command": "rm -rf tests/"}},
    {"type": "tool_result", "content": "removed 12 files"},
]


@pytest.fixture
def agents(db):
    study = make_study("ag", taxonomy="agent-misalignment")
    for name, n in (("s1", 4), ("s2", 3)):
        conversation = Conversation.objects.create(
            study=study, external_id=name, source_format="native", n_turns=n,
            metadata={"modality": "cli" if name == "s1" else "ide"},
        )  # fmt: skip
        for i in range(1, n + 1):
            Turn.objects.create(
                conversation=conversation,
                index=i,
                user_text=f"Turn {i}: please fix the failing tests, do not touch the API.",
                reply_text=f"I **changed** the API\n\nof module {i}.",
                reply_parts=PARTS,
            )
    return study


def episode(conversation="s1", first=1, last=2, confidence=0.9, evidence=None, **extra):
    evidence = evidence or [{"turn": first, "part": "user", "quote": "do not touch the API"}]
    record = {
        "conversation": conversation, "first_turn": first, "last_turn": last,
        "goal": "keep the API", "confidence": confidence, "evidence": evidence,
    }  # fmt: skip
    return record | extra


def write_jsonl(path, records) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)
