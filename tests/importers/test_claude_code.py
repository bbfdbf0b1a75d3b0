"""Claude Code session logs (FORMATS.md section 7a): one file, one conversation; only human
prompts start turns; thinking, tool calls, tool results and sub-agent traffic are reply
parts; the lines of one assistant message are merged; unknown line types are ignored; a bad
line is reported `file:line: reason` and the rest kept."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.importers.claude_code import parse_file
from annotation.models import Conversation

from .agent_files import SESSION, cc_assistant, cc_user, claude_code_session


def test_it_imports_a_session_as_one_conversation_of_its_human_prompts(study, files):
    path = files.jsonl(f"{SESSION}.jsonl", *claude_code_session())
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.errors) == (1, 2, [])
    conversation = Conversation.objects.get()
    assert conversation.external_id == SESSION
    assert conversation.source_format == "claude-code"
    assert conversation.metadata == {
        "title": "Fix the flaky cart test",
        "cwd": "/home/dev/shop",
        "gitBranch": "main",
        "version": "2.1.63",
        "modality": "cli",
        "tool": "Claude Code",
    }
    first, second = conversation.turns.order_by("index")
    assert first.user_text == "Why does test_cart fail?"  # the isMeta line is not a prompt
    assert first.reply_text == "Let me run the test.\n\nThe total is rounded twice."
    assert first.reply_parts == [
        {"type": "thinking", "content": "Run it first."},
        {
            "type": "tool_call",
            "id": "toolu_01",
            "name": "Bash",
            "arguments": json.dumps({"command": "pytest tests/test_cart.py"}),
        },
        {"type": "tool_result", "content": "1 failed", "tool_use_id": "toolu_01", "is_error": True},
    ]
    assert first.metadata["model"] == "claude-sonnet-4-5-20250929"
    assert first.metadata["timestamp"] == "2026-02-03T10:00:01.000Z"
    # the sub-agent's prompt and answer are the reply's parts, not a turn, not its text
    assert second.user_text == "Fix it please."
    assert second.reply_text == "Fixed: one round() left."
    assert second.reply_parts == [
        {"type": "sidechain", "role": "user", "content": "Investigate the rounding"},
        {"type": "sidechain", "role": "assistant", "content": "Found round() twice."},
    ]


def test_bad_lines_are_reported_and_the_rest_kept(study, files):
    lines = [json.dumps(x) for x in claude_code_session()]
    lines.insert(4, "{not json")
    lines.insert(6, json.dumps(["a", "list"]))
    lines.insert(8, json.dumps({"type": "user", "sessionId": SESSION, "message": "hi"}))
    lines.append('{"type": "assistant", "message": {"id": "msg_9", "content": [')  # cut off
    path = files.raw("s.jsonl", "\n".join(lines))
    report = import_files(study, [path])
    assert report.conversations == 1 and report.turns == 2
    # the session is one record, imported: its bad lines are left out, each a warning
    assert report.warnings == [
        f"{path}:5: invalid JSON: Expecting property name enclosed in double quotes at column 2"
        "; the line is left out",
        f"{path}:7: the line is a list, not an object; the line is left out",
        f"{path}:9: field 'message' is missing or not an object; the line is left out",
        f"{path}:{len(lines)}: invalid JSON: Expecting value at column 62 (the last line looks "
        "cut off); the line is left out",
    ]
    assert (report.read, report.rejected, report.errors) == (1, 0, [])


def test_lines_are_ordered_by_time_then_by_append_order(study, files):
    t = "2026-02-03T10:00:{:02d}Z".format
    path = files.jsonl(
        "s.jsonl",
        cc_assistant("a2", "u2", "m2", {"type": "text", "text": "second answer"}, t(4)),
        cc_user("u1", None, "first", t(1)),
        cc_assistant("a1", "u1", "m1", {"type": "text", "text": "first answer"}, t(2)),
        cc_user("u2", "a1", "second", t(3)),
    )
    import_files(study, [path])
    turns = Conversation.objects.get().turns.order_by("index")
    assert [(t.user_text, t.reply_text) for t in turns] == [
        ("first", "first answer"),
        ("second", "second answer"),
    ]


def test_a_line_written_twice_counts_once(study, files):
    prompt = cc_user("u1", None, "hi", "2026-02-03T10:00:01Z")
    answer = cc_assistant(
        "a1", "u1", "m1", {"type": "text", "text": "hello"}, "2026-02-03T10:00:02Z"
    )
    import_files(study, [files.jsonl("s.jsonl", prompt, answer, prompt, answer)])
    turn = Conversation.objects.get().turns.get()
    assert (turn.user_text, turn.reply_text) == ("hi", "hello")


def test_a_subagent_log_alone_is_rejected_with_the_reason(study, files):
    path = files.jsonl(
        "agent-1.jsonl",
        cc_user("u1", None, "Investigate", "2026-02-03T10:00:01Z", isSidechain=True),
        cc_assistant(
            "a1",
            "u1",
            "m1",
            {"type": "text", "text": "ok"},
            "2026-02-03T10:00:02Z",
            isSidechain=True,
        ),
    )
    report = import_files(study, [path])
    assert report.errors == [
        f"{path}: only sub-agent (sidechain) lines: a sub-agent's log, not a session; "
        "nothing imported from it"
    ]


def test_a_session_of_bookkeeping_only_has_nothing_to_sort(study, files):
    path = files.jsonl(
        "s.jsonl",
        {"type": "summary", "summary": "t", "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "sessionId": SESSION,
            "parentUuid": None,
        },
    )
    report = import_files(study, [path])
    assert report.errors == [f"{path}: no user message: nothing to sort"]


# -- properties -------------------------------------------------------------------------------


@st.composite
def _session(draw):
    """(lines, number of human prompts): user lines of every kind, assistant lines of a few
    message ids (several blocks each), and bookkeeping lines, in time order."""
    lines, prompts = [], 0
    for i in range(draw(st.integers(1, 25))):
        ts = f"2026-02-03T10:{i // 60:02d}:{i % 60:02d}Z"
        kind = draw(
            st.sampled_from(["prompt", "meta", "sidechain", "result", "assistant", "other"])
        )
        if kind == "prompt":
            prompts += 1
            content = draw(st.sampled_from(["x", "", [{"type": "text", "text": "y"}]]))
            lines.append(cc_user(f"u{i}", None, content, ts))
        elif kind == "meta":
            lines.append(cc_user(f"u{i}", None, "caveat", ts, isMeta=True))
        elif kind == "sidechain":
            lines.append(cc_user(f"u{i}", None, "sub", ts, isSidechain=True))
        elif kind == "result":
            block = {"type": "tool_result", "tool_use_id": "t", "content": "out"}
            lines.append(cc_user(f"u{i}", None, [block], ts))
        elif kind == "assistant":
            message_id = f"msg_{draw(st.integers(0, 3))}"
            block = draw(st.sampled_from([{"type": "text", "text": "a"},
                                          {"type": "thinking", "thinking": "t"},
                                          {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]))  # fmt: skip
            lines.append(cc_assistant(f"u{i}", None, message_id, block, ts))
        else:
            lines.append({"type": draw(st.sampled_from(["summary", "system", "attachment"]))})
    return lines, prompts


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=_session())
def test_the_prompts_are_the_human_ones(tmp_path, session):
    lines, prompts = session
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    try:
        record, errors = parse_file(path, "s.jsonl")
    except Exception as exc:  # a session of sub-agent lines only
        assert "sidechain" in str(exc)
        return
    assert errors == []
    assert sum(m.role == "user" for m in record.messages) == prompts


def test_the_card_shows_the_reply_in_the_order_of_the_log(study, files):
    """Thinking, prose, a tool call, its result, prose again: the card shows them in that
    order (issue 21 point 7), not all the prose first."""
    from django.template.loader import render_to_string

    from annotation.rendering import reply_sequence

    path = files.jsonl(f"{SESSION}.jsonl", *claude_code_session())
    import_files(study, [path])
    first = Conversation.objects.get().turns.get(index=1)
    # the log's order: thinking, "Let me run the test.", Bash call, its result, the finding
    sequence = [
        ("text", item.text) if item.part is None else (item.part["type"], None)
        for item in reply_sequence(first)
    ]
    assert sequence == [
        ("thinking", None),
        ("text", "Let me run the test."),
        ("tool_call", None),
        ("tool_result", None),
        ("text", "The total is rounded twice."),
    ]
    html = render_to_string("annotation/_reply.html", {"turn": first})
    marks = ["Run it first.", "Let me run the test.", "pytest tests/test_cart.py", "1 failed",
             "The total is rounded twice."]  # fmt: skip
    positions = [html.index(mark) for mark in marks]
    assert positions == sorted(positions)
    # the stored text is unchanged: evidence offsets into it stay valid
    assert first.reply_text == "Let me run the test.\n\nThe total is rounded twice."


def test_a_reply_without_a_recorded_order_shows_its_text_first():
    from types import SimpleNamespace

    from annotation.rendering import reply_sequence

    turn = SimpleNamespace(reply_text="Done.", reply_parts=[{"type": "thinking"}], metadata={})
    assert [i.text for i in reply_sequence(turn)] == ["Done.", None]
    # a malformed order (offsets past the text) is ignored rather than losing text
    turn.metadata = {"reply_order": [[0, 1], [99, 1]]}
    assert [i.text for i in reply_sequence(turn)] == ["Done.", None]
