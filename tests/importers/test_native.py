"""cardsort's native JSONL and the error policy of FORMATS.md section 0 for JSONL files."""

from __future__ import annotations

import json

from annotation.importers import import_files
from annotation.models import Conversation, Turn
from tests.factories import make_conversation, make_study


def conv(cid: str, *texts: str, **extra) -> dict:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    return {"id": cid, "messages": messages, **extra}


def test_it_imports_conversations_turns_and_metadata(study, files):
    path = files.jsonl(
        "a.jsonl",
        conv("c1", "write fizzbuzz", "```py\nfor i in range(1, 16): ...\n```", metadata={"m": 1}),
        conv("c2", "a", "b", "c", "d"),
    )
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (2, 3, 0)
    c1 = Conversation.objects.get(external_id="c1")
    assert c1.metadata == {"m": 1}
    assert c1.source_format == "native"
    assert (c1.source_file, c1.source_line) == (str(path), 1)
    assert Turn.objects.get(conversation=c1).reply_text.startswith("```py")


def test_it_skips_a_bad_line_in_the_middle_and_keeps_the_rest(study, files):
    path = files.jsonl(
        "a.jsonl",
        conv("c1", "q", "a"),
        '{"id": "c2", "messages": [{"role": "user", "content": "q"',
        conv("c3", "q", "a"),
        {"id": "c4", "messages": [{"role": "wizard", "content": "x"}]},
        {"messages": [{"role": "user", "content": "no id"}], "id": ""},
        conv("c5", "q", "a"),
    )
    report = import_files(study, [path])
    assert report.conversations == 3
    assert report.rejected == 3
    assert report.errors[0].startswith(f"{path}:2: invalid JSON")
    assert report.errors[1] == f"{path}:4: messages[0]: unknown role 'wizard'"
    assert report.errors[2] == f"{path}:5: field 'id' is missing or not a string"
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {"c1", "c3", "c5"}


def test_it_reports_a_cut_off_last_line_as_a_json_error_on_that_line(study, files):
    path = files.raw(
        "a.jsonl",
        '{"id": "c1", "messages": [{"role": "user", "content": "q"}]}\n'
        '{"id": "c2", "messages": [{"role": "user", "con',
    )
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [f"{path}:2: invalid JSON: {report.errors[0].split('JSON: ')[1]}"]
    assert "cut off" in report.errors[0]


def test_it_ignores_blank_lines_silently_and_keeps_line_numbers(study, files):
    path = files.jsonl("a.jsonl", "", conv("c1", "q", "a"), "   \t", "", "not json")
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [f"{path}:5: invalid JSON: Expecting value at column 1"]
    assert Conversation.objects.get().source_line == 2


def test_it_rejects_a_duplicate_id_naming_both_lines(study, files):
    path = files.jsonl("a.jsonl", conv("c1", "q", "first"), conv("c2", "q"), conv("c1", "q", "2nd"))
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}:3: duplicate id 'c1' (first seen at {path}:1)"]
    assert Turn.objects.get(conversation__external_id="c1").reply_text == "first"


def test_it_rejects_ids_already_in_the_study_but_not_in_another_study(study, files):
    make_conversation(study, "c1")
    other = make_study("other")
    path = files.jsonl("b.jsonl", conv("c1", "q", "a"), conv("c9", "q", "a"))
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors[0].startswith(f"{path}:1: duplicate id 'c1' (first seen at")
    assert import_files(other, [path]).conversations == 2


def test_it_catches_duplicates_across_batches(study, files, monkeypatch):
    monkeypatch.setattr("annotation.importers.writer.BATCH_SIZE", 2)
    path = files.jsonl("a.jsonl", *[conv(f"c{i}", "q") for i in range(5)], conv("c0", "again"))
    report = import_files(study, [path])
    assert report.conversations == 5
    assert report.errors == [f"{path}:6: duplicate id 'c0' (first seen at {path}:1)"]


def test_it_names_a_line_that_is_not_utf8(study, tmp_path):
    path = tmp_path / "a.jsonl"
    good = json.dumps(conv("c1", "q")).encode()
    path.write_bytes(good + b'\n{"id": "\xff"}\n')
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [f"{path}:2: not valid UTF-8 at byte 9"]


def test_it_uses_the_display_name_in_errors_and_source_file(study, files):
    path = files.jsonl("tmp8f3k.upload", conv("c1", "q"), "{")
    report = import_files(study, [path], display_names={str(path): "chats.jsonl"})
    assert report.errors[0].startswith("chats.jsonl:2: invalid JSON")
    assert Conversation.objects.get().source_file == "chats.jsonl"


def test_it_caps_the_errors_of_the_job_result_and_counts_the_rest(study, files):
    path = files.jsonl("a.jsonl", conv("c1", "q", "a"), *["{" for _ in range(1003)])
    report = import_files(study, [path])
    assert report.rejected == 1003 and len(report.errors) == 1003
    result = report.as_dict()
    assert len(result["errors"]) == 1000 and result["errors_not_shown"] == 3
    assert result["errors"][0].startswith(f"{path}:2: invalid JSON")
    assert (result["conversations"], result["turns"]) == (1, 1)
    assert report.summary_line() == (
        "Imported 1 conversations (1 turns) from 1 file(s); rejected 1003 records; "
        "1004 records read."
    )
    assert json.loads(json.dumps(result)) == result
