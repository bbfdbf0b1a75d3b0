"""Streaming and batching: memory does not grow with the file, writes go in batches, and both
write paths (bulk_create, PostgreSQL COPY) store the same rows."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from django.db import DatabaseError, connection

from annotation.db.options import WriterOptions
from annotation.importers import ImportReport, import_files
from annotation.importers import writer as writer_module
from annotation.importers.json_array import read_json_array
from annotation.importers.readers import read_jsonl
from annotation.importers.records import CHUNK_SIZE, NUL
from annotation.models import Conversation, Turn
from tests.factories import make_study


def record(i: int) -> dict:
    return {
        "id": f"c{i}",
        "conversations": [
            {"from": "human", "value": f"Question {i}: why does `x[1:]` skip ü, 中文 and 🙂?"},
            {"from": "gpt", "value": "```python\nprint([1, 2, 3][1:])\n```\nIt starts at 1, ]"},
        ],
        "score": 1.5e-3 * i,
    }


@pytest.mark.parametrize("chunk_size", [1, 7, 64, CHUNK_SIZE])
def test_it_reads_a_json_array_across_any_chunk_boundary(tmp_path, chunk_size):
    values = [record(i) for i in range(20)] + [12345, "tail ]", None, [1, [2]]]
    path = tmp_path / "a.json"
    path.write_text(
        "\ufeff[\n" + ",\n".join(json.dumps(v, ensure_ascii=False) for v in values) + "\n]\n",
        encoding="utf-8",
    )
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert [i.error for i in items if i.error] == []
    assert [i.obj for i in items] == values
    assert [i.index for i in items] == list(range(len(values)))


@pytest.fixture
def reworded_decode_errors(monkeypatch):
    """Another Python may word its JSON errors differently: the array reader must tell a
    record cut by the end of its buffer from a real error by where the error is, not by
    what the message says."""
    real_raw_decode = json.JSONDecoder.raw_decode

    def reworded(self, s, idx=0):
        try:
            return real_raw_decode(self, s, idx)
        except json.JSONDecodeError as exc:
            raise json.JSONDecodeError("Something else", exc.doc, exc.pos) from None

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", reworded)


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 1000])
def test_it_reads_strings_cut_by_a_chunk_boundary_whatever_the_errors_are_called(
    tmp_path, reworded_decode_errors, chunk_size
):
    text = 'long words, a \\ backslash, "quotes", ü and 🙂\n' * 8
    values = [{"id": f"c{i}", "text": f"{i} {text}"} for i in range(6)]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(values, indent=1), encoding="utf-8")
    items = list(read_json_array(path, chunk_size=chunk_size))
    assert [i.error for i in items if i.error] == []
    assert [i.obj for i in items] == values


@pytest.mark.parametrize("broken", ['"conversations": [}', '"conversations" "oops"'])
def test_it_still_stops_at_a_real_error_whatever_the_errors_are_called(
    tmp_path, reworded_decode_errors, broken
):
    body = ",".join(json.dumps(record(i)) for i in range(3))
    tail = ",".join(json.dumps(record(i)) for i in range(3, 3000))
    path = tmp_path / "bad.json"
    path.write_text(f'[{body}, {{"id": "x", {broken}}}, {tail}]', encoding="utf-8")
    items = list(read_json_array(path, chunk_size=4096))
    assert [i.obj["id"] for i in items[:3]] == ["c0", "c1", "c2"]
    assert len(items) == 4 and items[3].error.startswith("invalid JSON: Something else at")
    assert items[3].offset < path.stat().st_size / 10


@pytest.mark.slow
def test_it_reads_a_large_json_array_incrementally(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        for i in range(40_000):
            f.write(("," if i else "") + json.dumps(record(i)))
        f.write("]")
    size = path.stat().st_size
    assert size > 8_000_000

    items = read_json_array(path)
    first = next(items)
    # The first record arrives after one chunk, not after reading the file.
    assert first.obj["id"] == "c0" and first.offset <= CHUNK_SIZE
    tracemalloc.start()
    count = 1 + sum(1 for _ in items)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 40_000
    assert peak < size / 20, f"peak {peak} bytes for a {size}-byte file"


@pytest.mark.slow
def test_it_reads_a_large_jsonl_file_line_by_line(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(40_000):
            f.write(json.dumps(record(i)) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    count = sum(1 for _ in read_jsonl(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 40_000
    assert peak < size / 20


def test_it_stops_at_a_syntax_error_in_an_array_without_reading_on(tmp_path):
    body = ",".join(json.dumps(record(i)) for i in range(3))
    tail = ",".join(json.dumps(record(i)) for i in range(3, 3000))
    path = tmp_path / "bad.json"
    path.write_text(f'[{body}, {{"id": "x", "conversations": [}}, {tail}]', encoding="utf-8")
    items = list(read_json_array(path, chunk_size=4096))
    assert [i.obj["id"] for i in items[:3]] == ["c0", "c1", "c2"]
    assert len(items) == 4
    assert items[3].index == 3 and items[3].error.startswith("invalid JSON: Expecting value")
    assert items[3].offset < path.stat().st_size / 10


def test_it_writes_in_batches_and_reports_progress_per_batch(db, tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 10)
    study = make_study()
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(record(i)) + "\n" for i in range(35)), encoding="utf-8")
    calls: list[tuple[int, int]] = []
    report = import_files(study, [path], progress=lambda done, total: calls.append((done, total)))
    assert (report.conversations, report.turns) == (35, 35)
    size = path.stat().st_size
    assert all(total == size for _, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1] == (size, size)
    # three full batches, the last partial one at the end of the file, and the final call
    assert 4 <= len(calls) <= 6


def test_it_rejects_only_the_records_the_database_refuses(db, tmp_path, monkeypatch):
    real_write = writer_module.Writer._write

    def fussy_write(self, batch):
        if any(c.external_id == "c3" for c in batch):
            raise DatabaseError("value not allowed")
        real_write(self, batch)

    monkeypatch.setattr(writer_module.Writer, "_write", fussy_write)
    study = make_study()
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(record(i)) + "\n" for i in range(6)), encoding="utf-8")
    report = import_files(study, [path], fmt="sharegpt")
    assert report.conversations == 5
    assert report.errors == [f"{path}:4: the database refused it: value not allowed"]
    assert not Conversation.objects.filter(external_id="c3").exists()


def test_it_uses_bulk_create_on_sqlite_and_copy_on_postgresql(db):
    writer = writer_module.Writer(make_study(), ImportReport())
    assert writer.use_copy == (connection.vendor == "postgresql")


def rows(study) -> list[tuple]:
    conversations = list(
        Conversation.objects.filter(study=study)
        .order_by("source_line")
        .values_list(
            "external_id",
            "source_format",
            "source_line",
            "system_prompt",
            "preamble",
            "metadata",
            "n_turns",
        )
    )
    turns = list(
        Turn.objects.filter(conversation__study=study)
        .order_by("conversation__source_line", "index")
        .values_list(
            "index",
            "user_text",
            "reply_text",
            "reply_parts",
            "reply_empty",
            "reply_missing",
            "metadata",
        )
    )
    return conversations + turns


@pytest.mark.postgres
def test_it_stores_the_same_rows_with_copy_and_bulk_create(db, tmp_path, monkeypatch):
    messages = [
        {"role": "system", "content": 'tabs\tand "quotes", commas, \\backslashes\\ and \\N'},
        {"role": "assistant", "content": "preamble\r\nwith CRLF"},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t", "function": {}}]},
        {"role": "user", "content": "ünï ✓\n```\ncode\n```"},
    ]
    lines = [
        json.dumps({"id": f"n{i}", "messages": messages, "metadata": {"k": [i, None]}})
        for i in range(5)
    ]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    results = {}
    for use_copy in (True, False):
        study = make_study(f"s-{use_copy}".lower())
        options = WriterOptions.for_connection(copy=use_copy)
        report = import_files(study, [path], writer_options=options)
        assert (report.conversations, report.turns, report.rejected) == (5, 10, 0)
        results[use_copy] = rows(study)
    assert results[True] == results[False]


@pytest.mark.postgres
def test_it_rejects_a_nul_byte_postgresql_cannot_store_and_keeps_the_batch(db, tmp_path):
    lines = [json.dumps(record(i)) for i in range(4)]
    lines[2] = json.dumps({"id": "nul", "conversations": [{"from": "human", "value": "a\x00b"}]})
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = import_files(make_study(), [path])
    assert report.conversations == 3
    # the reader refuses it (on SQLite too), before the database would
    assert report.errors == [f"{path}:3: conversations[0].value: {NUL}"]
