"""OpenAI chat `messages` JSONL (FORMATS.md section 5)."""

from __future__ import annotations

import json

from annotation.importers import import_files
from annotation.models import Conversation, Turn


def test_it_synthesises_ids_from_file_name_and_line(study, files):
    path = files.jsonl(
        "ft.jsonl",
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        "",
        {"messages": [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]},
    )
    report = import_files(study, [path])
    assert report.conversations == 2
    ids = sorted(Conversation.objects.values_list("external_id", flat=True))
    assert ids == ["ft.jsonl:1", "ft.jsonl:3"]
    assert set(Conversation.objects.values_list("source_format", flat=True)) == {"openai"}


def test_it_maps_developer_to_system_and_concatenates_content_parts(study, files):
    path = files.jsonl(
        "ft.jsonl",
        {
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "Use Python."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What does this screenshot show?"},
                        {"type": "image_url", "image_url": {"url": "data:...", "detail": "low"}},
                        {"type": "file", "file": {"file_id": "f1", "filename": "trace.txt"}},
                    ],
                },
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
            ]
        },
    )
    import_files(study, [path])
    conversation = Conversation.objects.get()
    assert conversation.system_prompt == "Use Python."
    turn = conversation.turns.get()
    assert turn.user_text == "What does this screenshot show?\n[image]\n[file: trace.txt]"
    assert turn.reply_text == "I can't."


def test_it_keeps_tool_calls_and_results_in_the_reply(study, files):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "run_tests", "arguments": json.dumps({"path": "tests/"})},
    }
    path = files.jsonl(
        "ft.jsonl",
        {
            "tools": [{"type": "function", "function": {"name": "run_tests"}}],
            "messages": [
                {"role": "user", "content": "run the tests"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "3 passed"},
                {"role": "assistant", "content": "All 3 pass.", "weight": 1},
                {"role": "user", "content": "thanks"},
                {"role": "assistant", "content": None, "tool_calls": [call], "weight": 0},
            ],
        },
    )
    report = import_files(study, [path])
    assert report.turns == 2
    first, second = Turn.objects.order_by("index")
    assert first.reply_text == "All 3 pass."
    assert first.reply_parts == [
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "run_tests",
            "arguments": '{"path": "tests/"}',
        },
        {"type": "tool_result", "content": "3 passed", "tool_call_id": "call_1"},
    ]
    # the answer came after the call and its result: the card shows it there (rendering)
    assert first.metadata == {"weight": 1, "reply_order": [[0, 2]]}
    # Only a tool call: the reply is there and not empty, though it has no text.
    assert second.reply_text == "" and not second.reply_empty and not second.reply_missing
    assert Conversation.objects.get().metadata["tools"][0]["function"]["name"] == "run_tests"


def test_it_rejects_a_record_without_messages_naming_the_line(study, files):
    path = files.jsonl(
        "ft.jsonl",
        {"messages": [{"role": "user", "content": "a"}]},
        {"prompt": "old completion format", "messages": "nope"},
        {"messages": [{"role": "user", "content": 42}]},
    )
    report = import_files(study, [path], fmt="openai")
    assert report.conversations == 1
    assert report.errors == [
        f"{path}:2: field 'messages' is a str, not a list",
        f"{path}:3: messages[0].content is a int, not a string or list",
    ]
