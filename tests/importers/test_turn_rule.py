"""FORMATS.md section 0, clause by clause, on the one turn builder every format uses."""

from __future__ import annotations

from annotation.importers import import_files
from annotation.importers.base import Message, Record, build_conversation
from annotation.models import Conversation


def build(*messages: Message, declared: int | None = None):
    return build_conversation(Record("c1", list(messages), declared_turns=declared))


def M(role: str, content: str = "", **kw) -> Message:
    return Message(role=role, content=content, **kw)


def test_it_keeps_system_messages_as_the_system_prompt_in_order():
    system, _, turns, _ = build(
        M("system", "You are a coder."),
        M("user", "write sort"),
        M("system", "Answer in Python."),
        M("assistant", "def sort(xs): ..."),
    )
    assert system == "You are a coder.\n\nAnswer in Python."
    assert [t.user_text for t in turns] == ["write sort"]


def test_it_merges_consecutive_user_messages_into_one_turn():
    _, _, turns, _ = build(
        M("user", "here is my code:"),
        M("user", "```py\nprint(1)\n```"),
        M("assistant", "looks fine"),
        M("user", "thanks"),
        M("assistant", "welcome"),
    )
    assert len(turns) == 2
    assert turns[0].user_text == "here is my code:\n\n```py\nprint(1)\n```"
    assert turns[0].reply_text == "looks fine"
    assert [t.index for t in turns] == [1, 2]


def test_it_merges_consecutive_assistant_messages_in_order():
    _, _, turns, _ = build(M("user", "q"), M("assistant", "part 1"), M("assistant", "part 2"))
    assert turns[0].reply_text == "part 1\n\npart 2"


def test_it_puts_tool_traffic_in_the_reply_and_never_starts_a_turn_with_it():
    call = {"type": "tool_call", "id": "c1", "name": "run", "arguments": "{}"}
    result = {"type": "tool_result", "tool_call_id": "c1", "content": "ok"}
    _, _, turns, _ = build(
        M("user", "run the tests"),
        M("assistant", "", missing=True, parts=[call]),
        M("tool", "ok", parts=[result]),
        M("assistant", "All tests pass."),
    )
    assert len(turns) == 1
    assert turns[0].reply_parts == [call, result]
    assert turns[0].reply_text == "All tests pass."
    assert not turns[0].reply_empty and not turns[0].reply_missing


def test_it_keeps_messages_before_the_first_user_as_preamble_with_a_warning():
    _, preamble, turns, warnings = build(
        M("assistant", "Hi! How can I help?"), M("user", "fix my loop"), M("assistant", "done")
    )
    assert preamble == [{"role": "assistant", "content": "Hi! How can I help?"}]
    assert len(turns) == 1 and turns[0].user_text == "fix my loop"
    assert any("preamble" in w for w in warnings)


def test_it_counts_an_empty_user_message_followed_by_a_reply_as_a_turn():
    _, _, turns, _ = build(
        M("user", ""), M("assistant", "It looks like your message is empty."), M("user", "hi")
    )
    assert len(turns) == 2
    assert turns[0].user_text == ""


def test_it_flags_an_empty_reply_and_a_missing_one():
    _, _, turns, _ = build(M("user", "a"), M("assistant", ""), M("user", "b"))
    assert len(turns) == 2
    assert turns[0].reply_empty and not turns[0].reply_missing
    assert turns[1].reply_missing and not turns[1].reply_empty


def test_it_recounts_turns_and_warns_when_the_dataset_counter_disagrees():
    _, _, turns, warnings = build(
        M("user", "a"), M("assistant", "b"), M("user", "c"), M("assistant", "d"), declared=3
    )
    assert len(turns) == 2
    assert any("turn=3, counted 2" in w for w in warnings)
    _, _, _, warnings = build(M("user", "a"), M("assistant", "b"), declared=1)
    assert warnings == []


def test_it_stores_the_turn_rule_result_in_the_database(study, files):
    path = files.jsonl(
        "native.jsonl",
        {
            "id": "c1",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "assistant", "content": "Welcome."},
                {"role": "user", "content": "one"},
                {"role": "user", "content": "two"},
                {"role": "assistant", "content": ""},
                {"role": "user", "content": "three"},
            ],
        },
    )
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (1, 2, 0)
    conversation = Conversation.objects.get(study=study)
    assert conversation.system_prompt == "Be brief."
    assert conversation.preamble == [{"role": "assistant", "content": "Welcome."}]
    assert conversation.n_turns == 2
    first, second = conversation.turns.order_by("index")
    assert first.user_text == "one\n\ntwo" and first.reply_empty
    assert second.user_text == "three" and second.reply_missing
    assert any("preamble" in w for w in report.warnings)
