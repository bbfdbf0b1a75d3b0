"""ShareGPT / Vicuna style (FORMATS.md section 4): JSON arrays and JSONL."""

from __future__ import annotations

from annotation.importers import import_files
from annotation.models import Conversation, Turn


def share(cid: str, *pairs: tuple[str, str], **extra) -> dict:
    return {"id": cid, "conversations": [{"from": f, "value": v} for f, v in pairs], **extra}


def test_it_imports_a_json_array(study, files):
    path = files.json(
        "sharegpt.json",
        [
            share("abc_0", ("human", "sort a list"), ("gpt", "sorted(xs)"), model="vicuna-13b"),
            share("abc_4", ("user", "and reverse?"), ("chatgpt", "sorted(xs, reverse=True)")),
        ],
    )
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (2, 2, 0)
    # Split parts of one long chat stay separate conversations.
    abc_0 = Conversation.objects.get(external_id="abc_0")
    assert abc_0.metadata == {"model": "vicuna-13b"}
    assert abc_0.source_format == "sharegpt"
    assert abc_0.source_line == 0
    assert Turn.objects.get(conversation__external_id="abc_4").reply_text.startswith("sorted")


def test_it_imports_jsonl_too(study, files):
    path = files.jsonl("sharegpt.jsonl", share("x1", ("human", "hi"), ("gpt", "hello")))
    assert import_files(study, [path]).turns == 1


def test_it_maps_system_and_function_call_and_observation(study, files):
    path = files.json(
        "lf.json",
        [
            share(
                "t1",
                ("human", "weather in Paris?"),
                ("function_call", '{"name": "weather", "arguments": {"city": "Paris"}}'),
                ("observation", '{"temp": 21}'),
                ("gpt", "21 degrees."),
                system="You can call tools.",
                tools='[{"name": "weather"}]',
            )
        ],
    )
    report = import_files(study, [path])
    assert report.turns == 1
    conversation = Conversation.objects.get()
    assert conversation.system_prompt == "You can call tools."
    assert conversation.metadata == {"tools": '[{"name": "weather"}]'}
    turn = conversation.turns.get()
    assert turn.reply_text == "21 degrees."
    assert [p["type"] for p in turn.reply_parts] == ["tool_call", "tool_result"]


def test_it_rejects_an_unknown_role_naming_the_index_and_the_role(study, files):
    path = files.json(
        "s.json",
        [
            share("ok1", ("human", "a"), ("gpt", "b")),
            share("bad", ("human", "a"), ("narrator", "b")),
            share("ok2", ("human", "a"), ("gpt", "b")),
        ],
    )
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}[1] (id=bad): conversations[1]: unknown role from='narrator'"]


def test_it_treats_a_first_gpt_message_as_preamble(study, files):
    path = files.json("s.json", [share("p", ("gpt", "Hello!"), ("human", "hi"), ("gpt", "yes?"))])
    report = import_files(study, [path])
    assert report.turns == 1
    assert Conversation.objects.get().preamble == [{"role": "assistant", "content": "Hello!"}]
    assert report.warnings == [
        f"{path}[0] (id=p): 1 message(s) before the first user message kept as preamble"
    ]


def test_it_rejects_duplicate_ids_in_an_array_naming_both_indexes(study, files):
    path = files.json(
        "s.json",
        [share("d", ("human", "1")), share("e", ("human", "2")), share("d", ("human", "3"))],
    )
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}[2] (id=d): duplicate id 'd' (first seen at {path}[0] (id=d))"]


def test_it_keeps_the_records_before_a_cut_off_array(study, files):
    text = files.json("s.json", [share("a", ("human", "1")), share("b", ("human", "2"))])
    truncated = text.read_text()[:-30]
    path = files.raw("cut.json", truncated)
    report = import_files(study, [path])
    assert report.conversations == 1
    assert len(report.errors) == 1
    assert report.errors[0].startswith(f"{path}[1]: invalid JSON")
    assert "cut off" in report.errors[0]


def test_it_reports_a_non_object_element_by_index(study, files):
    path = files.json("s.json", [share("a", ("human", "1")), 42, share("b", ("human", "2"))])
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}[1]: record is a int, not an object"]
