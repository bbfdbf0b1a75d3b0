"""WildChat-1M / 4.8M and legacy WildChat v1 (FORMATS.md section 1)."""

from __future__ import annotations

from annotation.importers import import_files
from annotation.models import Conversation, Turn


def utterance(role: str, content: str, tid: int, ts=None, language="English") -> dict:
    user = role == "user"
    return {
        "content": content,
        "role": role,
        "language": language if content else "Nolang",
        "redacted": False,
        "toxic": False,
        "timestamp": None if user else ts,
        "turn_identifier": tid,
        "country": "France" if user else None,
        "state": None,
        "hashed_ip": "ab12" if user else None,
        "header": {"user-agent": "Mozilla/5.0"} if user else None,
    }


def wildchat(chash: str, rounds: list[tuple[str, str]], ts=1680300000000, **extra) -> dict:
    conversation = []
    for i, (q, a) in enumerate(rounds):
        tid = 100 + i
        conversation += [utterance("user", q, tid), utterance("assistant", a, tid, ts)]
    record = {
        "conversation_hash": chash,
        "model": "gpt-4-0314",
        "timestamp": ts,
        "conversation": conversation,
        "turn": len(rounds),
        "language": "English",
        "openai_moderation": [{"flagged": False} for _ in conversation],
        "detoxify_moderation": [{"toxicity": 0.001} for _ in conversation],
        "toxic": False,
        "redacted": False,
        "state": None,
        "country": "France",
        "hashed_ip": "ab12",
        "header": {"accept-language": "fr"},
    }
    record.update(extra)
    return record


CODE = "```python\ndef add(a, b):\n    return a + b\n```"


def test_it_imports_wildchat_1m_with_turn_metadata(study, files):
    path = files.jsonl(
        "wildchat.jsonl", wildchat("a" * 32, [("write add()", CODE), ("now tests", "def test")])
    )
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (1, 2, 0)
    conversation = Conversation.objects.get()
    assert conversation.source_format == "wildchat"
    assert conversation.external_id == "a" * 32
    assert conversation.metadata["model"] == "gpt-4-0314"
    assert conversation.metadata["timestamp"] == "2023-03-31T22:00:00+00:00"
    first = conversation.turns.get(index=1)
    assert first.reply_text == CODE
    assert first.metadata["turn_identifier"] == 100
    assert first.metadata["language"] == "English"
    # null on the user utterance, so the assistant's (the reply's arrival) is the turn's
    assert first.metadata["timestamp"] == "2023-03-31T22:00:00+00:00"


def test_it_parses_iso_and_epoch_ms_timestamps(study, files):
    path = files.jsonl(
        "w.jsonl",
        wildchat("1" * 32, [("a", "b")], ts="2023-04-09T00:02:53Z"),
        wildchat("2" * 32, [("a", "b")], ts="2023-04-09 00:02:53+00:00"),
        wildchat("3" * 32, [("a", "b")], ts=1680998573000),
        wildchat("4" * 32, [("a", "b")], ts="2023-04-09T02:02:53+02:00"),
        wildchat("5" * 32, [("a", "b")], ts="last tuesday"),
    )
    report = import_files(study, [path])
    assert report.conversations == 5
    stamps = dict(Conversation.objects.values_list("external_id", "metadata__timestamp"))
    for digit in "1234":
        assert stamps[digit * 32] == "2023-04-09T00:02:53+00:00"
    assert stamps["5" * 32] == "last tuesday"
    assert any(w.startswith(f"{path}:5: timestamp: not a timestamp") for w in report.warnings)


def test_it_imports_both_records_sharing_a_conversation_hash(study, files):
    same = "f" * 32
    path = files.jsonl(
        "w.jsonl", wildchat(same, [("hi", "Hello!")]), wildchat(same, [("hi", "Hello!")])
    )
    report = import_files(study, [path])
    assert report.conversations == 2 and report.rejected == 0
    assert Conversation.objects.filter(external_id=same).count() == 2
    # a second import of the same file adds neither (their fingerprints are there), but a
    # file holding the same record at a line not imported yet adds it
    again = import_files(study, [path])
    assert (again.conversations, again.already_imported) == (0, 2)
    longer = files.jsonl("x.jsonl", *[wildchat(same, [("hi", "Hello!")])] * 3)
    third = import_files(study, [longer])
    assert (third.conversations, third.already_imported) == (1, 2)
    assert Conversation.objects.filter(external_id=same).count() == 3


def test_it_counts_empty_user_inputs_as_turns(study, files):
    path = files.jsonl(
        "w.jsonl", wildchat("e" * 32, [("", "It seems your message is empty."), ("hi", "")])
    )
    report = import_files(study, [path])
    assert report.turns == 2
    empty_input, empty_reply = Turn.objects.order_by("index")
    assert empty_input.user_text == "" and empty_input.metadata["language"] == "Nolang"
    assert empty_reply.reply_empty


def test_it_recomputes_the_turn_counter_and_warns(study, files):
    path = files.jsonl("w.jsonl", wildchat("c" * 32, [("a", "b"), ("c", "d")], turn=3))
    report = import_files(study, [path])
    assert report.turns == 2
    assert Conversation.objects.get().n_turns == 2
    assert report.warnings == [f"{path}:1: the dataset says turn=3, counted 2 turns"]


def test_it_imports_legacy_wildchat_v1(study, files):
    record = {
        "conversation_id": "c0ffee" * 5 + "00",
        "model": "gpt-3.5-turbo",
        "timestamp": "2023-04-09T00:02:53+00:00",
        "conversation": [
            {
                "content": "fix this",
                "language": "English",
                "redacted": False,
                "role": "user",
                "toxic": False,
            },
            {
                "content": "done",
                "language": "English",
                "redacted": False,
                "role": "assistant",
                "toxic": False,
            },
        ],
        "turn": 1,
        "language": "English",
        "toxic": False,
        "redacted": False,
    }
    path = files.jsonl("v1.jsonl", record)
    report = import_files(study, [path])
    assert (report.conversations, report.turns) == (1, 1)
    assert Conversation.objects.get().source_format == "wildchat"
    assert Turn.objects.get().metadata == {"language": "English", "redacted": False, "toxic": False}


def test_it_names_the_line_of_a_broken_record(study, files):
    bad = wildchat("b" * 32, [("a", "b")])
    bad["conversation"][1]["content"] = ["not", "text"]
    path = files.jsonl("w.jsonl", wildchat("a" * 32, [("a", "b")]), bad)
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [f"{path}:2: conversation[1].content is a list, not a string"]
