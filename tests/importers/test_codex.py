"""Codex CLI rollouts (FORMATS.md section 7b): the text from the event_msg stream, tool calls
and their output from response_items, harness-injected user messages never turns."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.importers.codex import parse_file
from annotation.models import Conversation

from .agent_files import CODEX_ID, codex_rollout, cx


def test_it_imports_a_rollout_as_one_conversation_of_the_users_prompts(study, files):
    path = files.jsonl(f"rollout-2026-03-01T09-00-00-{CODEX_ID}.jsonl", *codex_rollout())
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.errors) == (1, 2, [])
    conversation = Conversation.objects.get()
    assert conversation.external_id == CODEX_ID
    assert conversation.source_format == "codex-cli"
    assert conversation.metadata["cli_version"] == "0.46.0"
    assert conversation.metadata["git"] == {"branch": "main"}
    first, second = conversation.turns.order_by("index")
    # the environment context and the prompt's copy among the response_items are not turns
    assert first.user_text == "List the endpoints"
    assert first.reply_text == "One endpoint: /users."  # once, from the event stream
    assert first.reply_parts == [
        {"type": "thinking", "content": "**Scanning routes**"},
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "shell",
            "arguments": '{"command":["rg","-n","@app.route"]}',
        },
        {
            "type": "tool_result",
            "tool_call_id": "call_1",
            "content": '{"output":"app.py:3:@app.route(\\"/users\\")","metadata":{"exit_code":0}}',
        },
    ]
    assert first.metadata["model"] == "gpt-5-codex"
    assert second.user_text == "Add /health"
    assert second.reply_text == "Added /health."
    kinds = [(p["type"], p.get("name")) for p in second.reply_parts]
    assert kinds == [
        ("tool_call", "apply_patch"),
        ("tool_result", None),
        ("tool_call", "local_shell"),
    ]
    assert second.reply_parts[0]["arguments"].startswith("*** Begin Patch")
    assert json.loads(second.reply_parts[2]["arguments"])["command"] == ["pytest", "-q"]


def test_a_rollout_without_the_event_stream_reads_its_messages_but_not_injected_ones(study, files):
    path = files.jsonl(
        "rollout-old.jsonl",
        cx(0, "session_meta", {"id": "old-1", "instructions": "Be brief."}),
        *[line for line in codex_rollout() if line["type"] == "response_item"],
    )
    report = import_files(study, [path])
    assert (report.conversations, report.errors) == (1, [])
    conversation = Conversation.objects.get()
    assert conversation.system_prompt == "Be brief."
    turn = conversation.turns.get()
    assert turn.user_text == "List the endpoints"
    assert turn.reply_text == "One endpoint: /users."
    assert [p["type"] for p in turn.reply_parts] == [
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "tool_call",
    ]


def test_bad_lines_are_reported_and_the_rest_kept(study, files):
    lines = [json.dumps(x) for x in codex_rollout()]
    lines.insert(3, "{oops")
    lines.insert(5, json.dumps({"timestamp": "t", "type": "event_msg", "payload": "hi"}))
    path = files.raw("r.jsonl", "\n".join(lines) + "\n")
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (1, 2, 0)
    assert report.warnings == [
        f"{path}:4: invalid JSON: Expecting property name enclosed in double quotes at column 2"
        "; the line is left out",
        f"{path}:6: field 'payload' is missing or not an object; the line is left out",
    ]


def test_a_rollout_that_does_not_start_with_session_meta_is_read_with_a_warning(study, files):
    path = files.jsonl("r.jsonl", *codex_rollout()[1:])
    report = import_files(study, [path], fmt="codex-cli")
    assert report.turns == 2
    assert Conversation.objects.get().external_id == "r"
    assert report.warnings == [f"{path}: line 1 is not session_meta, as a rollout's should be"]


def test_a_rollout_with_no_prompt_has_nothing_to_sort(study, files):
    path = files.jsonl("r.jsonl", *codex_rollout()[:2])
    report = import_files(study, [path])
    assert report.errors == [f"{path}: no user message: nothing to sort"]


@st.composite
def _rollout(draw):
    lines = [cx(0, "session_meta", {"id": "s"})]
    prompts = 0
    for i in range(draw(st.integers(0, 20))):
        kind = draw(
            st.sampled_from(["prompt", "injected", "copy", "agent", "call", "output", "other"])
        )
        if kind == "prompt":
            prompts += 1
            lines.append(cx(i, "event_msg", {"type": "user_message", "message": "p"}))
        elif kind == "injected":
            text = "<environment_context>x</environment_context>"
            lines.append(cx(i, "response_item", {"type": "message", "role": "user",
                                                 "content": [{"type": "input_text", "text": text}]}))  # fmt: skip
        elif kind == "copy":
            lines.append(cx(i, "response_item", {"type": "message", "role": "user",
                                                 "content": [{"type": "input_text", "text": "p"}]}))  # fmt: skip
        elif kind == "agent":
            lines.append(cx(i, "event_msg", {"type": "agent_message", "message": "a"}))
        elif kind == "call":
            lines.append(cx(i, "response_item", {"type": "function_call", "name": "shell",
                                                 "arguments": "{}", "call_id": "c"}))  # fmt: skip
        elif kind == "output":
            lines.append(cx(i, "response_item", {"type": "function_call_output", "call_id": "c",
                                                 "output": "o"}))  # fmt: skip
        else:
            lines.append(cx(i, "event_msg", {"type": "token_count"}))
    return lines, prompts


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rollout=_rollout())
def test_only_the_event_streams_user_messages_are_prompts(tmp_path, rollout):
    lines, prompts = rollout
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    record, errors = parse_file(path, "r.jsonl")
    assert errors == []
    users = [m for m in record.messages if m.role == "user"]
    if prompts:
        assert len(users) == prompts
    else:
        # no event stream: the response_item copies are read, the injected context never
        assert all(m.content == "p" for m in users)
