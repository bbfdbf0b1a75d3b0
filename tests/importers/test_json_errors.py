"""A JSON error names the line and column where it is in the file: JSONL lines (conversation
and annotation imports share one formatter), JSON array elements across read-ahead chunks,
and the structure of an array file around its elements."""

from __future__ import annotations

import json

import pytest

from annotation.importers import import_files
from annotation.importers.annotations import read_label_lines
from annotation.importers.json_array import read_json_array
from annotation.importers.records import CHUNK_SIZE

GOOD = json.dumps({"id": "c1", "messages": [{"role": "user", "content": "q"}]})
CUT = '{"id": "c2", "messages": [{"role": "user", "content": "q"'
UNTERMINATED = '{"id": "c2", "messages": [{"role": "user", "content": "q'


def test_it_names_the_column_where_a_line_ends_mid_record(study, files):
    path = files.jsonl("malformed.jsonl", GOOD, CUT, GOOD.replace("c1", "c3"))
    report = import_files(study, [path])
    assert report.conversations == 2
    # the line ends after its last character: the error is one column past it
    assert report.errors == [
        f"{path}:2: invalid JSON: Expecting ',' delimiter at column {len(CUT) + 1}"
    ]


def test_it_names_where_an_unterminated_string_starts_without_a_doubled_at(study, files):
    path = files.jsonl("malformed.jsonl", GOOD, UNTERMINATED)
    report = import_files(study, [path])
    start = UNTERMINATED.rindex('"') + 1
    assert report.errors == [
        f"{path}:2: invalid JSON: Unterminated string starting at column {start}"
    ]


def test_it_counts_columns_after_windows_line_endings_and_a_bom(study, files):
    path = files.root / "crlf.jsonl"
    path.write_bytes(("\ufeff" + GOOD + "\r\n" + CUT + "\r\n").encode("utf-8"))
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [
        f"{path}:2: invalid JSON: Expecting ',' delimiter at column {len(CUT) + 1}"
    ]


def test_it_formats_annotation_jsonl_errors_the_same_way(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(f'{{"conversation": "c1"}}\n{CUT}\n{UNTERMINATED}\n', encoding="utf-8")
    errors = [error for _, _, error in read_label_lines(path)]
    start = UNTERMINATED.rindex('"') + 1
    assert errors == [
        "",
        f"invalid JSON: Expecting ',' delimiter at column {len(CUT) + 1}",
        f"invalid JSON: Unterminated string starting at column {start}",
    ]


def sharegpt(i: int) -> dict:
    return {"id": f"s{i}", "conversations": [{"from": "human", "value": f"question {i} ]}}"}]}


def pretty_array(elements: list[str]) -> str:
    """An array as json.dump(indent=2) writes it, with some elements given as raw text."""
    return "[\n" + ",\n".join(elements) + "\n]\n"


def element_lines(i: int) -> str:
    return json.dumps(sharegpt(i), indent=2, ensure_ascii=False)


@pytest.mark.parametrize("chunk_size", [1, 7, 64, CHUNK_SIZE])
def test_it_names_the_line_and_column_of_an_error_inside_an_array(tmp_path, chunk_size):
    broken = element_lines(5).replace('"human"', '"human" "oops"')
    text = pretty_array([element_lines(i) for i in range(5)] + [broken])
    path = tmp_path / "s.json"
    path.write_text("\ufeff" + text, encoding="utf-8")
    bad_line = text[: text.index('"oops"')].count("\n") + 1
    bad_column = len(text[: text.index('"oops"')].rsplit("\n", 1)[1]) + 1
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert [i.obj["id"] for i in items[:5]] == ["s0", "s1", "s2", "s3", "s4"]
    assert items[5].index == 5
    assert items[5].error == (
        f"invalid JSON: Expecting ',' delimiter at line {bad_line}, column {bad_column}"
    )


@pytest.mark.parametrize("chunk_size", [7, CHUNK_SIZE])
def test_it_names_the_line_and_column_of_a_missing_comma_between_elements(tmp_path, chunk_size):
    text = "[\n" + element_lines(0) + ",\n" + element_lines(1) + "\n" + element_lines(2) + "\n]"
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    third = text.index(element_lines(2))
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert [i.obj["id"] for i in items if i.error is None] == ["s0", "s1"]
    assert items[2].error == (
        "invalid JSON: expected ',' or ']' after element, found '{' "
        f"at line {text[:third].count(chr(10)) + 1}, column 1"
    )


def test_it_reports_data_after_the_closing_bracket_instead_of_dropping_it(study, files):
    # two arrays written one after the other: the second one is not silently lost
    first = json.dumps([sharegpt(0)])
    path = files.raw("two.json", first + "\n" + json.dumps([sharegpt(1)]) + "\n")
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [
        f"{path}[1]: invalid JSON: extra data after the closing ']' at line 2, column 1"
    ]


def test_it_names_the_line_and_column_of_a_cut_off_array(study, files):
    text = pretty_array([element_lines(0), element_lines(1)])
    cut = text[: text.index('"question 1')]
    path = files.raw("cut.json", cut)
    report = import_files(study, [path])
    assert report.conversations == 1
    last_line = cut.rsplit("\n", 1)[1]
    assert report.errors == [
        f"{path}[1]: invalid JSON: Expecting value at line {cut.count(chr(10)) + 1}, "
        f"column {len(last_line) + 1} (the file looks cut off)"
    ]


def test_it_names_the_first_error_of_a_file_no_record_of_which_can_be_read(study, files):
    path = files.raw("broken.jsonl", '{"id": 1, oops}\n{"id": 2, oops}\n')
    report = import_files(study, [path])
    assert report.conversations == 0
    assert report.files_not_read == [
        f"{path}: cannot recognise the format (no record could be read; line 1: invalid "
        "JSON: Expecting property name enclosed in double quotes at column 11); nothing imported"
    ]


def test_one_pretty_printed_conversation_is_one_record(study, files):
    """One conversation written as a pretty-printed JSON object (issue 20, defect 6: it was
    refused as invalid JSON Lines) imports as that conversation."""
    path = files.raw("one.json", json.dumps(sharegpt(0), indent=2))
    report = import_files(study, [path])
    assert (report.conversations, report.errors) == (1, [])


@pytest.mark.parametrize("chunk_size", [7, CHUNK_SIZE])
def test_it_names_the_byte_of_the_file_that_is_not_utf8_in_an_array(tmp_path, chunk_size):
    head = ("\ufeff[\n" + element_lines(0) + ",\n").encode("utf-8")
    path = tmp_path / "s.json"
    path.write_bytes(head + b'{"id": "\xff"}]')
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert items[0].obj == sharegpt(0)
    bad_byte = len(head) + len(b'{"id": "') + 1
    assert items[1].error == f"not valid UTF-8 at byte {bad_byte} of the file (invalid start byte)"


def test_a_pretty_printed_object_longer_than_the_sniffed_head_is_one_record(study, files):
    record = sharegpt(0)
    record["conversations"] = record["conversations"] * 200  # far past the 4 KB head
    path = files.raw("long.json", json.dumps(record, indent=2))
    assert path.stat().st_size > 10_000
    report = import_files(study, [path])
    assert (report.conversations, report.errors) == (1, [])
