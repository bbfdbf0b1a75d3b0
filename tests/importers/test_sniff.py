"""Format recognition (FORMATS.md "Sniffing" table) and what happens to files it fails on."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.importers.readers import read_items
from annotation.importers.sniff import detect_container, sniff_record
from annotation.models import Conversation

WILDCHAT = {
    "conversation_hash": "a" * 32,
    "conversation": [{"role": "user", "content": "hi", "turn_identifier": 1}],
}
WILDCHAT_V1 = {
    "conversation_id": "b" * 32,
    "conversation": [{"role": "user", "content": "hi", "toxic": False, "language": "English"}],
}
LMSYS = {
    "conversation_id": "c" * 32,
    "conversation": [{"role": "user", "content": "hi"}],
    "openai_moderation": [],
}
SHAREGPT = {"id": "s1", "conversations": [{"from": "human", "value": "hi"}]}
OPENAI = {"messages": [{"role": "user", "content": "hi"}]}
NATIVE = {"id": "n1", "messages": [{"role": "user", "content": "hi"}], "metadata": {}}
WILDBENCH = {"session_id": "ae006110bb364606", "conversation_input": [], "checklist": []}


@pytest.mark.parametrize(
    "record, expected",
    [
        (WILDCHAT, "wildchat"),
        (WILDCHAT_V1, "wildchat"),
        (LMSYS, "lmsys"),
        (SHAREGPT, "sharegpt"),
        (OPENAI, "openai"),
        (NATIVE, "native"),
        (WILDBENCH, "wildbench"),
        ({"sessionId": "x", "parentUuid": None, "type": "user"}, "claude-code"),
        ({"timestamp": "t", "type": "session_meta", "payload": {}}, "codex-cli"),
        ({"text": "hello"}, None),
        ([1, 2], None),
    ],
)
def test_it_recognises_each_format_from_its_first_record(record, expected):
    assert sniff_record(record) == expected


def test_it_sniffs_each_file_on_its_own(study, files):
    a = files.jsonl("a.jsonl", NATIVE)
    b = files.json("b.json", [SHAREGPT])
    c = files.jsonl("c.jsonl", LMSYS)
    report = import_files(study, [a, b, c])
    assert report.conversations == 3 and report.errors == []
    formats = set(Conversation.objects.values_list("source_format", flat=True))
    assert formats == {"native", "sharegpt", "lmsys"}


def test_it_skips_unparseable_first_lines_when_sniffing(study, files):
    path = files.jsonl("a.jsonl", "{broken", "", OPENAI)
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [
        f"{path}:1: invalid JSON: Expecting property name enclosed in double quotes at column 2"
    ]


def test_it_reports_an_unrecognised_file_once_and_imports_the_others(study, files):
    bad = files.jsonl("notes.jsonl", {"text": "hello"}, {"text": "again"})
    markdown = files.raw("readme.md", "# Notes\n\nnothing here\n")
    missing = files.root / "missing.jsonl"
    good = files.jsonl("good.jsonl", NATIVE)
    report = import_files(study, [bad, markdown, missing, good])
    assert report.conversations == 1
    assert len(report.files_not_read) == 3 and report.errors == []
    assert report.files_not_read[0].startswith(
        f"{bad}: cannot recognise the format (first record has keys text; looked for "
        "wildchat: conversation_hash + conversation[*].turn_identifier"
    )
    # every format is named with what gives it away
    for name in ("lmsys", "wildbench", "swechat", "convcodebench", "specstory"):
        assert f"; {name}: " in report.files_not_read[0]
    assert report.files_not_read[1].startswith(f"{markdown}: cannot import")
    assert report.files_not_read[2].startswith(f"{missing}: cannot read the file")
    assert (report.rejected, report.read) == (0, 1)  # no record of the three files


def test_an_agent_log_without_a_prompt_is_recognised_and_rejected_naming_the_file(study, files):
    # Codex CLI was once recognised with no importer; every sniffed format now has one.
    path = files.jsonl("codex.jsonl", {"timestamp": "t", "type": "session_meta", "payload": {}})
    report = import_files(study, [path])
    assert report.conversations == 0
    assert report.errors == [f"{path}: no user message: nothing to sort"]


def test_it_uses_a_forced_format_without_sniffing(study, files):
    path = files.jsonl("x.jsonl", {"id": "n1", "messages": [{"role": "user", "content": "q"}]})
    report = import_files(study, [path], fmt="openai")
    assert Conversation.objects.get().external_id == "x.jsonl:1"
    assert report.conversations == 1


def test_it_refuses_an_unknown_format_name_listing_the_known_ones(study, files):
    path = files.jsonl("x.jsonl", NATIVE)
    with pytest.raises(ValueError, match="unknown format 'csv'.*native, openai, sharegpt"):
        import_files(study, [path], fmt="csv")


def test_it_warns_about_an_empty_file(study, files):
    path = files.raw("empty.jsonl", "\n  \n")
    report = import_files(study, [path])
    assert report.conversations == 0 and report.errors == []
    assert report.warnings == [f"{path}: the file is empty"]


_text = st.text(st.characters(exclude_characters="\x00"), max_size=30)  # a NUL is refused
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4)
    ),  # fmt: skip
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(
        st.dictionaries(_text, _json_values, min_size=1, max_size=5),
        min_size=1,
        max_size=4,
    ),  # fmt: skip
    indent=st.sampled_from([1, 2, 4, "\t"]),
)
@pytest.mark.slow
def test_one_object_over_many_lines_is_told_from_json_lines(tmp_path_factory, records, indent):
    """A pretty-printed object (over more than one line) is the container "object", read as its
    one record; the same records one a line are JSON lines (issue 20, defect 6)."""
    folder = tmp_path_factory.mktemp("sniff")
    pretty = folder / "pretty.json"
    pretty.write_text(json.dumps(records[0], indent=indent), encoding="utf-8")
    lines = folder / "lines.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert detect_container(lines) == "jsonl"
    if "\n" in pretty.read_text(encoding="utf-8"):
        assert detect_container(pretty) == "object"
        assert [i.obj for i in read_items(pretty, "object")] == [records[0]]


@pytest.mark.parametrize("broken", ["{broken", "{b", '{"id": 1,'])
def test_a_short_file_of_json_lines_whose_first_line_is_broken_stays_json_lines(tmp_path, broken):
    """A file shorter than the sniffer's window is read whole when its kind is told: a
    broken first line whose error lies near the file's end is not a record cut short by the
    window, so the file is JSON lines and the line after it is read (the file was taken for
    one broken object and its other lines were lost)."""
    path = tmp_path / "short.jsonl"
    path.write_text(f'{broken}\n{{"id": 7}}\n', encoding="utf-8")
    assert detect_container(path) == "jsonl"
    items = list(read_items(path, "jsonl"))
    assert [i.obj for i in items if i.error is None] == [{"id": 7}]
    assert [i.line for i in items if i.error is not None] == [1]
