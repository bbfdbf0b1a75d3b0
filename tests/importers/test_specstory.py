"""SpecStory Markdown exports (FORMATS.md section 6): the three generations, one session a
file, turns only at `_**User…**_` headers outside fenced code, thinking and tool use as reply
parts, and a file that is not SpecStory rejected whole."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.importers.base import RecordError
from annotation.importers.specstory import parse_file
from annotation.models import Conversation
from tests.factories import make_group
from tests.rendering.test_markdown import Tree

from .agent_files import SPECSTORY_EARLIEST, SPECSTORY_LEGACY, SPECSTORY_V2


def texts(conversation):
    return [(t.user_text, t.reply_text) for t in conversation.turns.order_by("index")]


def test_it_imports_a_v2_1_export_as_one_conversation(study, files):
    path = files.raw("2026-01-25_22-47-22Z-fix-the-test.md", SPECSTORY_V2)
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.errors) == (1, 2, [])
    conversation = Conversation.objects.get()
    assert conversation.external_id == "5d3c9f7e-1a2b-4c3d-9e8f-0a1b2c3d4e5f"
    assert conversation.source_format == "specstory"
    assert conversation.metadata["provider"] == "Claude Code"
    assert conversation.metadata["specstory_generation"] == "v2.1.0"
    assert conversation.metadata["title"] == "2026-01-25 22:47:22Z"
    first, second = conversation.turns.order_by("index")
    assert first.user_text == "Fix the failing test in `parser.py`."
    # the two Agent blocks are one reply; the header in the code block is code
    assert first.reply_text.startswith("I'll look at the parser first.\n\nThe split keeps")
    assert "```python\n_**User**_\ndef parse(s):" in first.reply_text
    assert [p["type"] for p in first.reply_parts] == ["thinking", "tool_call"]
    assert first.reply_parts[0]["content"].startswith("The user wants the test fixed.")
    call = first.reply_parts[1]
    assert (call["name"], call["tool_type"]) == ("Read", "read")
    assert "return s.split" in call["arguments"] and "<details>" not in call["arguments"]
    assert first.metadata["timestamp"] == "2026-01-25T22:47:22+00:00"
    assert first.metadata["model"] == "claude-sonnet-4-5"
    # sidechain traffic is the reply's, never a turn
    assert second.user_text == "Thanks. Now add a test."
    assert second.metadata["timestamp"] == "2026-01-25T22:48:03+00:00"  # local time, in UTC
    assert second.reply_text == "Added the test."
    assert [(p["type"], p["role"]) for p in second.reply_parts] == [
        ("sidechain", "user"),
        ("sidechain", "agent"),
    ]
    assert second.reply_parts[0]["content"] == "Write a pytest for parse()"


def test_it_imports_a_legacy_export_where_dashes_follow_every_block(study, files):
    path = files.raw("2025-10-01_23-30Z-refactor.md", SPECSTORY_LEGACY)
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.errors) == (1, 2, [])
    conversation = Conversation.objects.get()
    assert conversation.external_id == "0b6f2c1e-77aa-4bd0-9a55-3f1d2e4c5b6a"
    assert conversation.metadata["specstory_generation"] == "legacy"
    assert conversation.metadata["provider"] == "cursor"
    assert conversation.metadata["title"] == "Refactor the CSV loader (2025-10-01 23:30:12)"
    (user1, reply1), (user2, reply2) = texts(conversation)
    assert user1 == "Refactor load_csv to use the csv module."
    assert reply1 == (
        "Let me read the file.\n\nHere is the refactored version, using `csv.reader`."
    )
    first = conversation.turns.get(index=1)
    assert [(p["type"], p.get("name")) for p in first.reply_parts] == [
        ("tool_call", "read_file"),
        ("tool_result", None),
    ]
    assert first.reply_parts[1]["content"].startswith("Read file: loader.py\n")
    # an empty user block followed by the agent's output is a turn
    assert user2 == "" and reply2.startswith("You sent an empty message")


def test_it_imports_the_earliest_export_with_continuation_blocks(study, files):
    path = files.raw("executing-phase-1-with-@plan-md.md", SPECSTORY_EARLIEST)
    report = import_files(study, [path])
    assert (report.conversations, report.turns) == (1, 2)
    conversation = Conversation.objects.get()
    # no session comment: the file name is the id
    assert conversation.external_id == "executing-phase-1-with-@plan-md"
    assert conversation.metadata["specstory_generation"] == "earliest"
    assert conversation.metadata["title"] == (
        "Executing Phase 1 with @plan.md (2/13/2025, 9:33:58 AM)"
    )
    (user1, reply1), (user2, reply2) = texts(conversation)
    assert user1 == "Execute phase 1 of @plan.md"
    assert reply1 == "I'll start with the database schema.\n\nDone. Phase 1 is complete."
    assert conversation.turns.get(index=1).reply_parts == [
        {"type": "tool_call", "name": "edit_file", "arguments": ""}
    ]
    assert (user2, reply2) == ("Now phase 2.", "Starting phase 2.")


def test_tilde_fences_hide_headers_too_and_consecutive_users_merge(study, files):
    text = (
        "<!-- Generated by SpecStory -->\n\n_**User**_\n\nLook:\n\n~~~~markdown\n_**User**_\n"
        "```\n_**Agent**_\n~~~~\n\n_**User**_\n\nAnd this.\n\n_**Assistant**_\n\nSeen both.\n"
    )
    import_files(study, [files.raw("s.md", text)])
    conversation = Conversation.objects.get()
    assert texts(conversation) == [
        ("Look:\n\n~~~~markdown\n_**User**_\n```\n_**Agent**_\n~~~~\n\nAnd this.", "Seen both.")
    ]


def test_a_markdown_file_that_is_not_specstory_is_rejected_whole(study, files):
    path = files.raw("notes.md", "# Notes\n\n_**User**_ said hi\n")
    report = import_files(study, [path])
    assert report.conversations == 0
    assert report.files_not_read == [
        f"{path}: cannot import: the file is a Markdown file that is not a SpecStory export;"
        " nothing imported from it"
    ]
    forced = import_files(study, [path], fmt="specstory")
    assert forced.errors == [
        f"{path}: not a SpecStory export: no '<!-- Generated by SpecStory -->' or "
        "'## SpecStory' header and no '_**User**_' turn marker; nothing imported from it"
    ]
    assert forced.rejected == 1
    assert not Conversation.objects.exists()


def test_a_forced_specstory_file_without_header_but_with_turns_is_read(study, files):
    path = files.raw("bare.md", "_**User**_\n\nhi\n\n---\n\n_**Agent (gpt-5)**_\n\nhello\n")
    report = import_files(study, [path], fmt="specstory")
    assert report.conversations == 1
    assert texts(Conversation.objects.get()) == [("hi", "hello")]


def test_an_export_with_no_user_message_names_the_file(study, files):
    path = files.raw("x.md", "<!-- Generated by SpecStory -->\n\n_**Assistant**_\n\nHello\n")
    report = import_files(study, [path])
    assert report.errors == [f"{path}: no user message: nothing to sort"]


def test_a_file_that_is_not_utf8_is_rejected_naming_the_byte(study, files):
    path = files.root / "bad.md"
    path.write_bytes(b"<!-- Generated by SpecStory -->\n\n_**User**_\n\n\xff\n")
    report = import_files(study, [path])
    assert report.errors == [
        f"{path}: line 5: not valid UTF-8 at byte 46; nothing imported from it"
    ]


def test_the_same_session_imported_twice_is_a_duplicate(study, files):
    a = files.raw("a.md", SPECSTORY_V2)
    # the same session, exported again after one more prompt (the very same file would be
    # "already imported")
    b = files.raw("b.md", SPECSTORY_V2 + "\n---\n\n_**User**_\n\nOne more thing\n")
    report = import_files(study, [a, b])
    assert report.conversations == 1
    assert report.errors == [
        f"{b}: duplicate id '5d3c9f7e-1a2b-4c3d-9e8f-0a1b2c3d4e5f' (first seen at {a})"
    ]


@pytest.mark.django_db
def test_an_imported_agent_card_folds_its_thinking_and_tool_use(client, study, alice, files):
    import_files(study, [files.raw("s.md", SPECSTORY_V2)])
    group = make_group(study, "g", [alice])
    Conversation.objects.all().assign(group)
    turn = Conversation.objects.get().turns.get(index=1)
    client.force_login(alice)
    tree = Tree(client.get(reverse("card", args=[study.slug, turn.pk])).content.decode())
    parts = [a for t, a in tree.elements if t == "details" and "part" in a.get("class", "")]
    assert [p["data-kind"] for p in parts] == ["thinking", "tool_call"]
    text = " ".join(tree.text.split())
    assert "Tool call Read" in text and "Thinking" in text


# -- properties -------------------------------------------------------------------------------

_line = st.sampled_from(
    ["plain text", "_**User**_", "_**Agent**_", "_****_", "---", "_**User - sidechain**_", ""]
)


@st.composite
def _session(draw):
    """(file text, number of human prompts): blocks of random roles whose bodies hold
    header-looking lines, some inside fenced code."""
    lines = ["<!-- Generated by SpecStory, Markdown v2.1.0 -->", ""]
    prompts = 0
    for _ in range(draw(st.integers(1, 8))):
        role = draw(st.sampled_from(["User", "Agent", "User - sidechain", ""]))
        lines += [f"_**{role}**_", ""]
        prompts += role == "User"
        for _ in range(draw(st.integers(0, 3))):
            fence = draw(st.sampled_from(["```", "~~~", "````"]))
            lines += [fence, *draw(st.lists(_line, max_size=4)), fence]
            lines += [draw(st.sampled_from(["text", "---", ""]))]
        lines += ["---", ""]
    return "\n".join(lines), prompts


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=_session())
def test_turns_start_only_at_user_headers_outside_code(tmp_path, session):
    text, prompts = session
    path = tmp_path / "p.md"
    path.write_text(text, encoding="utf-8")
    try:
        record, errors = parse_file(path, "p.md")
    except RecordError:
        assert prompts == 0
        return
    assert errors == []
    users = [m for m in record.messages if m.role == "user"]
    assert len(users) == prompts
