"""SWE-chat's `conversations` table (FORMATS.md section 7c): rows grouped into sessions."""

from __future__ import annotations

import itertools
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.models import Conversation
from annotation.rendering import reply_part

from .conftest import Files, stored

COLUMNS = (
    "turn_id session_id turn_number role turn_type content is_conversational tool_name "
    "tool_input_json command file_path timestamp prompt_intent agent model"
).split()


SLUGS = itertools.count()


def row(session: str, n: int, turn_type: str, content=None, role=None, **extra) -> dict:
    """A row with every column (Parquet wants one schema), most of them null."""
    r = dict.fromkeys(COLUMNS)
    r.update(
        turn_id=f"{session}-{n}",
        session_id=session,
        turn_number=n,
        role=role or ("user" if turn_type in ("user_prompt", "tool_result") else "assistant"),
        turn_type=turn_type,
        content=content,
        is_conversational=True,
        agent="claude-code",
        model="claude-sonnet-4",
    )
    r.update(extra)
    return r


def session_rows(session: str) -> list[dict]:
    return [
        row(session, 0, "session_start", "cwd=/repo", role="metadata", is_conversational=False),
        row(session, 1, "user_prompt", "fix the failing test", prompt_intent="debug",
            timestamp="2025-06-01T10:00:00Z"),
        row(session, 2, "thinking", "The test imports a missing module."),
        row(session, 3, "tool_use", tool_name="Bash", command="pytest -x",
            tool_input_json='{"command": "pytest -x"}'),
        row(session, 4, "tool_result", "1 failed", role="user"),
        row(session, 5, "progress", "running", role="progress"),
        row(session, 6, "assistant_response", "Fixed the import."),
        row(session, 7, "user_prompt", "thanks, now commit", prompt_intent="git"),
        row(session, 8, "assistant_response", "Committed."),
    ]  # fmt: skip


def test_it_groups_rows_into_one_conversation_per_session(study, files):
    a, b = session_rows("s-a"), session_rows("s-b")
    # sessions interleaved, and rows out of turn_number order
    mixed = [a[3], b[0], a[1], b[1], a[0], *b[2:], a[2], *a[4:]]
    path = files.jsonl("conversations.jsonl", *mixed)
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.errors) == (2, 4, [])
    c = Conversation.objects.get(external_id="s-a")
    assert c.source_format == "swechat"
    assert c.metadata == {
        "session_id": "s-a",
        "agent": "claude-code",
        "model": "claude-sonnet-4",
        "rows": 7,
        "skipped_rows": 2,
        "modality": "cli",  # the agent's name tells it (test_modality.py)
        "tool": "claude-code",
    }
    first, second = c.turns.order_by("index")
    assert first.user_text == "fix the failing test"
    assert first.reply_text == "Fixed the import."
    # the tool result's role "user" never starts a turn
    assert [p["type"] for p in first.reply_parts] == ["thinking", "tool_call", "tool_result"]
    assert first.reply_parts[1]["name"] == "Bash"
    assert first.metadata["prompt_intent"] == "debug"
    assert first.metadata["timestamp"] == "2025-06-01T10:00:00+00:00"
    assert (second.user_text, second.reply_text) == ("thanks, now commit", "Committed.")
    # the card folds them as the other agent formats' parts
    kinds = [reply_part(p) for p in first.reply_parts]
    assert [(k.kind, k.name, k.summary) for k in kinds] == [
        ("thinking", "", "The test imports a missing module."),
        ("tool_call", "Bash", "pytest -x"),
        ("tool_result", "", "1 failed"),
    ]


def test_it_names_file_row_and_field_of_broken_rows(study, files):
    good = session_rows("s-ok")
    bad_number = session_rows("s-bad")
    bad_number[3]["turn_number"] = None
    no_type = session_rows("s-notype")
    no_type[6]["turn_type"] = None
    only_meta = [row("s-meta", 0, "session_start", role="metadata", is_conversational=False)]
    orphan = row("", 1, "user_prompt", "lost")
    rows = [*good, *bad_number, *no_type, *only_meta, orphan]
    path = files.parquet("conversations.parquet", rows)
    report = import_files(study, [path])
    assert report.conversations == 1
    assert sorted(report.errors) == sorted(
        [
            f"{path} row 12 (id=s-bad): field 'turn_number' is missing, not an integer",
            f"{path} row 24 (id=s-notype): field 'turn_type' is missing or not a string",
            f"{path} row 27 (id=s-meta): session 's-meta' has no user_prompt row: nothing to sort",
            f"{path} row 28: field 'session_id' is missing or not a string",
        ]
    )
    bad_number[3]["turn_number"] = "three"
    jsonl = files.jsonl("conversations.jsonl", *bad_number, "{not json", orphan)
    report = import_files(study, [jsonl])
    assert report.errors == [
        f"{jsonl}:10: invalid JSON: Expecting property name enclosed in double quotes at column 2",
        f"{jsonl}:11: field 'session_id' is missing or not a string",
        f"{jsonl}:4: field 'turn_number' is 'three', not an integer",
    ]


def test_it_keeps_the_first_of_a_session_imported_twice(study, files):
    path = files.jsonl("c.jsonl", *session_rows("s-a"))
    import_files(study, [path])
    again = import_files(study, [path])
    assert (again.conversations, again.already_imported, again.errors) == (0, 1, [])
    rows = session_rows("s-a")
    rows[1] = {**rows[1], "content": rows[1]["content"] + " (edited)"}
    edited = files.jsonl("edited.jsonl", *rows)
    report = import_files(study, [edited])
    assert report.conversations == 0
    assert report.errors == [f"{edited}:2: duplicate id 's-a' (first seen at {path}:2)"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000), sessions=st.integers(1, 4))
def test_jsonl_array_and_parquet_of_shuffled_rows_give_the_same_conversations(
    study, tmp_path_factory, seed, sessions
):
    from tests.factories import make_study

    rows = [r for i in range(sessions) for r in session_rows(f"s{i}")]
    random.Random(seed).shuffle(rows)
    files = Files(tmp_path_factory.mktemp("swe"))
    results = []
    for path in (
        files.jsonl("c.jsonl", *rows),
        files.raw("c.json", json.dumps(rows)),
        files.parquet("c.parquet", rows),
    ):
        target = make_study(f"swe-{next(SLUGS)}")
        report = import_files(target, [path])
        assert report.errors == [] and report.conversations == sessions
        results.append(stored(target))
    # JSONL hands sessions on in the order they first appear, the others as they end
    assert sorted(results[0]) == sorted(results[1]) == sorted(results[2])
    first = sorted(results[0])[0]
    assert [t[1] for t in first[4]] == ["fix the failing test", "thanks, now commit"]
