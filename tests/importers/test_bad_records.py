"""Records that used to break a whole import: nesting too deep for Python's JSON code, and NUL
characters, which PostgreSQL cannot store (SQLite can). Each costs its own record, one error
line naming the file and line (and the field), on both databases; the records around it are
imported."""

from __future__ import annotations

import json

import pytest

from annotation.db.options import WriterOptions
from annotation.importers import ImportReport, import_files
from annotation.importers import writer as writer_module
from annotation.importers.annotations import read_label_lines
from annotation.importers.base import BuiltConversation, BuiltTurn
from annotation.importers.json_array import read_json_array
from annotation.importers.records import MAX_DEPTH
from annotation.models import Conversation, Turn
from tests.factories import make_study

TOO_DEEP = f"the record is nested deeper than {MAX_DEPTH} levels"


def conv(cid: str, text: str = "q", **extra) -> dict:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "a"}]
    return {"id": cid, "messages": messages, **extra}


def nested(depth: int) -> str:
    """A JSON value `depth` levels deep (counting the record around it as one more)."""
    return "[" * depth + "]" * depth


def deep_line(cid: str, depth: int) -> str:
    line = json.dumps(conv(cid, metadata={"x": None}))
    return line.replace("null", nested(depth))


@pytest.mark.parametrize("depth", [5000, MAX_DEPTH - 1], ids=["recursion-error", "too-deep"])
def test_it_rejects_a_deeply_nested_line_and_keeps_the_lines_around_it(study, files, depth):
    path = files.jsonl("a.jsonl", conv("c1"), deep_line("c2", depth), conv("c3"))
    report = import_files(study, [path])
    assert report.errors == [f"{path}:2: {TOO_DEEP}"]
    assert (report.conversations, report.rejected) == (2, 1)
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {"c1", "c3"}


def test_it_keeps_a_record_exactly_as_deep_as_allowed(study, files):
    # the record is level 1, metadata 2, x 3: MAX_DEPTH - 2 more levels reach the limit
    path = files.jsonl("a.jsonl", deep_line("c1", MAX_DEPTH - 2))
    report = import_files(study, [path])
    assert (report.conversations, report.errors) == (1, [])


@pytest.mark.parametrize("chunk_size", [7, 4096, 1 << 16])
@pytest.mark.parametrize("depth", [5000, MAX_DEPTH], ids=["recursion-error", "too-deep"])
def test_it_skips_a_deeply_nested_array_element_and_reads_on(tmp_path, depth, chunk_size):
    # brackets inside strings must not confuse the skipping
    element = json.dumps({"id": "deep", "tricky": 'a "]]" \\"[', "x": None})
    element = element.replace("null", nested(depth))
    path = tmp_path / "s.json"
    records = [{"id": f"s{i}", "conversations": [{"from": "human", "value": "]"}]} for i in (0, 2)]
    path.write_text(
        f"[{json.dumps(records[0])},\n {element},\n{json.dumps(records[1])}]", encoding="utf-8"
    )
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert [(i.index, i.error) for i in items if i.error] == [(1, f"{TOO_DEEP} (line 2)")]
    assert [i.obj for i in items if i.error is None] == records


def test_it_rejects_an_array_element_nested_too_deeply_by_index(study, files):
    path = files.raw("s.json", f'[{{"id": "a", "x": {nested(5000)}}}]')
    report = import_files(study, [path], fmt="sharegpt")
    assert report.errors == [f"{path}[0]: {TOO_DEEP} (line 1)"]


def test_it_reports_a_cut_off_deep_array_element_once(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('[{"id": "a"}, ' + "[" * 5000, encoding="utf-8")
    items = list(read_json_array(path, chunk_size=64))
    assert items[0].obj == {"id": "a"}
    assert [(i.index, i.error) for i in items[1:]] == [
        (1, f"{TOO_DEEP} (line 1); the file looks cut off")
    ]


def test_it_rejects_a_deeply_nested_annotation_record_and_reads_on(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"conversation": "c1"}\n'
        f'{{"conversation": "c2", "note": {nested(5000)}}}\n'
        '{"conversation": "c3"}\n',
        encoding="utf-8",
    )
    rows = list(read_label_lines(path))
    assert [(n, e) for n, _, e in rows] == [(1, ""), (2, TOO_DEEP), (3, "")]


NUL_FIELD = "contains a NUL character (\\u0000), which the database cannot store"


@pytest.mark.parametrize(
    "record, field",
    [
        (conv("c2", "print('a\x00b')"), "messages[0].content"),
        (conv("c2\x00"), "id"),
        (conv("c2", metadata={"tags": ["ok", "n\x00l"]}), "metadata.tags[1]"),
        (conv("c2", metadata={"k\x00": 1}), "metadata (key 'k\\x00')"),
    ],
)
def test_it_rejects_a_nul_character_naming_line_and_field_on_every_database(
    study, files, record, field
):
    path = files.jsonl("a.jsonl", conv("c1"), record, conv("c3"))
    report = import_files(study, [path])
    assert report.errors == [f"{path}:2: {field}: {NUL_FIELD}"]
    assert (report.conversations, report.rejected) == (2, 1)
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {"c1", "c3"}


def test_it_keeps_an_escaped_backslash_u0000_which_is_no_nul(study, files):
    # the JSON text \\u0000 is a backslash followed by "u0000": six harmless characters
    path = files.jsonl("a.jsonl", conv("c1", "a regex: \\u0000"))
    report = import_files(study, [path])
    assert report.errors == []
    assert Turn.objects.get().user_text == "a regex: \\u0000"


def test_it_rejects_a_nul_character_in_a_json_array_element(study, files):
    records = [
        {"id": "s0", "conversations": [{"from": "human", "value": "q"}]},
        {"id": "s1", "conversations": [{"from": "human", "value": "\x00"}]},
        {"id": "s2", "conversations": [{"from": "human", "value": "q"}]},
    ]
    path = files.json("s.json", records)
    text = path.read_text(encoding="utf-8")
    line = text[: text.index('"s1"')].count("\n")  # the line of the element's "{"
    report = import_files(study, [path])
    # no id in the location: it could be the field holding the NUL
    assert report.errors == [f"{path}[1]: conversations[0].value: {NUL_FIELD} (line {line})"]
    assert report.conversations == 2


def test_it_rejects_a_nul_character_in_an_annotation_record(tmp_path):
    path = tmp_path / "labels.jsonl"
    lines = [{"conversation": "c1", "note": "fine"}, {"conversation": "c1", "note": "a\x00"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    rows = list(read_label_lines(path))
    assert [(n, e) for n, _, e in rows] == [(1, ""), (2, f"note: {NUL_FIELD}")]


def built(cid: str, user_text: str = "q", metadata: dict | None = None) -> BuiltConversation:
    turn = BuiltTurn(index=1, user_text=user_text, reply_text="a", reply_missing=False)
    return BuiltConversation(
        external_id=cid,
        source_format="native",
        source_file="a.jsonl",
        source_line=1,
        location=f"a.jsonl:{cid}",
        system_prompt="",
        preamble=[],
        metadata=metadata or {},
        turns=[turn],
        check_duplicate=False,
    )


@pytest.mark.postgres
@pytest.mark.parametrize("use_copy", [True, False], ids=["copy", "bulk_create"])
def test_it_rejects_a_nul_the_database_refuses_and_keeps_the_batch(db, use_copy):
    # The readers never let a NUL through; if one reaches the writer all the same, both
    # PostgreSQL writers refuse that conversation only.
    study = make_study()
    report = ImportReport()
    writer = writer_module.Writer(
        study, report, options=WriterOptions.for_connection(copy=use_copy)
    )
    for conversation in (
        built("c1"),
        built("c2", user_text="a\x00b"),
        built("c3", metadata={"k": "\x00"}),
        built("c4"),
    ):
        writer.add(conversation)
    writer.flush()
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {"c1", "c4"}
    assert report.conversations == 2
    assert [e.split(": ", 1)[0] for e in report.errors] == ["a.jsonl:c2", "a.jsonl:c3"]
    assert all("the database refused it" in e for e in report.errors)
