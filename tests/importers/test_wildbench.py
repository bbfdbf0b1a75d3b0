"""WildBench v2, v2-hard and v1-legacy (FORMATS.md section 3)."""

from __future__ import annotations

from annotation.importers import import_files
from annotation.models import Conversation

from .conftest import stored


def message(role: str, content: str, ts="2024-03-10T08:01:02Z", legacy=False) -> dict:
    m = {"content": content, "language": "English", "redacted": False, "role": role}
    if not legacy:
        m["timestamp"] = ts if role == "assistant" else None
    m["toxic"] = False
    return m


def wildbench(session: str, texts: list[str], **extra) -> dict:
    """A v2 record: `texts` alternate user / assistant and end with the user's query."""
    roles = ["user", "assistant"]
    record = {
        "id": "wb-" + session[:4],
        "session_id": session,
        "conversation_input": [message(roles[i % 2], t) for i, t in enumerate(texts)],
        "references": {"gpt-4": "Use a dict comprehension: {k: v for k, v in pairs}"},
        "length": (len(texts) + 1) // 2,
        "checklist": ["Does the answer use a comprehension?", "Is the code runnable?"],
        "intent": "The user wants to build a dict from pairs.",
        "primary_tag": "Coding & Debugging",
        "secondary_tags": ["Information seeking"],
    }
    record.update(extra)
    return record


def test_it_imports_a_v2_record_with_the_query_as_a_last_turn_without_reply(study, files):
    record = wildbench("ae006110bb364606", ["make a dict", "dict(pairs)", "as a comprehension?"])
    report = import_files(study, [files.jsonl("wb.jsonl", record)])
    assert (report.conversations, report.turns, report.rejected) == (1, 2, 0)
    assert report.warnings == []
    c = Conversation.objects.get()
    assert (c.external_id, c.source_format) == ("ae006110bb364606", "wildbench")
    first, last = c.turns.order_by("index")
    assert (first.user_text, first.reply_text, first.reply_missing) == (
        "make a dict",
        "dict(pairs)",
        False,
    )
    assert first.metadata["timestamp"] == "2024-03-10T08:01:02+00:00"
    # the reference answer is never the reply
    assert (last.user_text, last.reply_text, last.reply_missing) == (
        "as a comprehension?",
        "",
        True,
    )
    assert c.metadata["references"] == {"gpt-4": record["references"]["gpt-4"]}
    assert c.metadata["checklist"] == record["checklist"]
    assert c.metadata["primary_tag"] == "Coding & Debugging"
    assert c.metadata["secondary_tags"] == ["Information seeking"]
    assert c.metadata["intent"].startswith("The user wants")
    assert "conversation_input" not in c.metadata


def test_it_imports_v1_legacy_and_v2_hard_shapes(study, files):
    legacy = wildbench("1" * 16, ["q"], appropriate=True)
    legacy["id"] = 17
    legacy["conversation_input"] = [message("user", "q", legacy=True)]
    no_session = dict(legacy, id=18)
    del no_session["session_id"]
    hard = wildbench("2" * 16, ["q", "a", "q2"], avg_score=6.5, var_score=1.25)
    for m in hard["conversation_input"]:
        m["timestamp"] = None  # dtype null in v2-hard
    report = import_files(study, [files.jsonl("wb.jsonl", legacy, no_session, hard)])
    assert (report.conversations, report.turns, report.rejected) == (3, 4, 0)
    by_id = {c.external_id: c for c in Conversation.objects.all()}
    assert set(by_id) == {"1" * 16, "18", "2" * 16}
    assert by_id["1" * 16].metadata["appropriate"] is True
    assert by_id["2" * 16].metadata["avg_score"] == 6.5
    assert "timestamp" not in by_id["2" * 16].turns.get(index=1).metadata


def test_it_checks_length_but_never_trusts_it(study, files):
    path = files.jsonl(
        "wb.jsonl",
        wildbench("3" * 16, ["q", "a", "q2"], length=3),  # messages: a unit it may have
        wildbench("4" * 16, ["q", "a", "q2"], length=7),
    )
    report = import_files(study, [path])
    assert report.turns == 4
    assert report.warnings == [
        f"{path}:2: the dataset says length=7, counted 2 turns in 3 messages"
    ]


def test_it_warns_when_the_input_does_not_end_with_the_query(study, files):
    path = files.jsonl("wb.jsonl", wildbench("5" * 16, ["q", "a"]))
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.warnings == [
        f"{path}:1: conversation_input does not end with the user query WildBench asks to "
        "answer (last role 'assistant')"
    ]


def test_it_names_file_line_and_field_of_broken_records(study, files):
    bad_role = wildbench("6" * 16, ["q"])
    bad_role["conversation_input"][0]["role"] = "bot"
    bad_reference = wildbench("7" * 16, ["q"], references={"gpt-4": ["not", "text"]})
    no_input = wildbench("8" * 16, ["q"])
    del no_input["conversation_input"]
    good = wildbench("9" * 16, ["q"])
    path = files.jsonl("wb.jsonl", bad_role, bad_reference, no_input, good, good)
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [
        f"{path}:1: conversation_input[0]: unknown role 'bot'",
        f"{path}:2: field 'references.gpt-4' is not a string",
        f"{path}:3: field 'conversation_input' is missing",
        f"{path}:5: duplicate id '{'9' * 16}' (first seen at {path}:4)",
    ]


def test_it_reads_the_same_records_from_parquet(study, files):
    from tests.factories import make_study

    records = [
        wildbench("a" * 16, ["make a dict", "dict(pairs)", "as a comprehension?"]),
        wildbench("b" * 16, ["q"]),
    ]
    import_files(study, [files.jsonl("wb.jsonl", *records)])
    other = make_study("s2")
    report = import_files(other, [files.parquet("wb.parquet", records)])
    assert report.conversations == 2 and report.errors == []
    assert stored(other) == stored(study)
