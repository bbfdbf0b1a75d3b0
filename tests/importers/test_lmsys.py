"""LMSYS-Chat-1M (FORMATS.md section 2)."""

from __future__ import annotations

from annotation.importers import import_files
from annotation.models import Conversation


def lmsys(cid: str, *texts: str, turn: int | None = None) -> dict:
    conversation = [
        {"content": t, "role": ["user", "assistant"][i % 2]} for i, t in enumerate(texts)
    ]
    return {
        "conversation_id": cid,
        "model": "vicuna-13b",
        "conversation": conversation,
        "turn": len(texts) // 2 if turn is None else turn,
        "language": "English",
        "openai_moderation": [{"categories": {}, "category_scores": {}, "flagged": False}]
        * len(texts),
        "redacted": True,
    }


def test_it_imports_lmsys_with_metadata(study, files):
    path = files.jsonl(
        "lmsys.jsonl",
        lmsys("0" * 32, "Hi NAME_1, write a regex for emails", r"\S+@\S+", "thanks", "np"),
    )
    report = import_files(study, [path])
    assert (report.conversations, report.turns) == (1, 2)
    conversation = Conversation.objects.get()
    assert conversation.source_format == "lmsys"
    assert conversation.metadata["model"] == "vicuna-13b"
    assert conversation.metadata["redacted"] is True
    assert conversation.turns.get(index=1).reply_text == r"\S+@\S+"


def test_it_rejects_a_repeated_conversation_id(study, files):
    path = files.jsonl(
        "lmsys.jsonl", lmsys("1" * 32, "a", "b"), lmsys("2" * 32, "c", "d"), lmsys("1" * 32, "e")
    )
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}:3: duplicate id '{'1' * 32}' (first seen at {path}:1)"]


def test_it_warns_when_the_turn_counter_disagrees(study, files):
    path = files.jsonl("lmsys.jsonl", lmsys("3" * 32, "a", "b", "c", turn=1))
    report = import_files(study, [path])
    assert report.turns == 2
    assert report.warnings == [f"{path}:1: the dataset says turn=1, counted 2 turns"]
    assert Conversation.objects.get().turns.get(index=2).reply_missing
