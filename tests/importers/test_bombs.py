"""Issue 24 point 7: a line longer than CARDSORT_MAX_LINE_BYTES is a record error, read in
bounded chunks and skipped to the next line; a gzip file is never decompressed past
CARDSORT_MAX_DECOMPRESSED_BYTES (to memory or, for Parquet, to disk), the error naming the
file and the limit. For every reader: JSONL, JSON arrays, Parquet, SWE-chat's session index,
session logs, the label import. (The memory-capped run on a real bomb: tests/limits/
test_memory_cap.py.)"""

from __future__ import annotations

import gzip
import io
import json
import os

import pytest

from annotation.importers import containers, import_files
from annotation.importers.annotations import read_label_lines
from annotation.importers.json_array import read_json_array
from annotation.importers.readers import read_jsonl

from .agent_files import claude_code_session
from .test_swechat import session_rows

LINE_LIMIT = 1000
LONG = f"line longer than {LINE_LIMIT:,} bytes (CARDSORT_MAX_LINE_BYTES)"


def native(i: int, text: str = "fix my regex") -> dict:
    return {"id": f"n{i}", "messages": [{"role": "user", "content": f"{text} {i}"},
                                        {"role": "assistant", "content": "done"}]}  # fmt: skip


def jsonl_text(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


@pytest.fixture
def line_limit(settings):
    settings.CARDSORT_MAX_LINE_BYTES = LINE_LIMIT
    return LINE_LIMIT


def too_big(limit: int) -> str:
    return (
        f"the file decompresses to more than {limit:,} bytes "
        "(CARDSORT_MAX_DECOMPRESSED_BYTES); the rest of it is not read"
    )


# -- the line limit ----------------------------------------------------------------------------


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_line_over_the_limit_is_a_record_error_and_the_next_lines_are_read(
    study, files, line_limit, packed
):
    text = jsonl_text(native(1), native(2, "x" * 5000), native(3))
    path = files.raw("c.jsonl", text)
    if packed:
        path = files.gzip("c.jsonl.gz", path)
    report = import_files(study, [path])
    assert report.errors == [f"{path}:2: {LONG}"]
    assert report.conversations == 2


def test_a_line_exactly_at_the_limit_is_read(study, files, settings):
    record = native(1, "y" * 900)
    text = json.dumps(record)
    settings.CARDSORT_MAX_LINE_BYTES = len(text.encode())
    for ending in ("\n", "\r\n", ""):
        items = list(read_jsonl(files.raw(f"e{len(ending)}.jsonl", text + ending)))
        assert [(i.error, i.obj) for i in items] == [(None, record)]
    settings.CARDSORT_MAX_LINE_BYTES = len(text.encode()) - 1
    items = list(read_jsonl(files.raw("over.jsonl", text + "\n")))
    assert [i.error for i in items] == [f"line longer than {len(text) - 1:,} bytes "
                                        "(CARDSORT_MAX_LINE_BYTES)"]  # fmt: skip


def test_a_long_line_is_read_in_bounded_pieces_never_whole():
    """`lines` never asks the file for more than the limit (and a line ending) at a time, nor
    for more than a skip chunk while it skips: the 2 GiB line of a bomb is never held."""
    sizes = []

    class Watched(io.BytesIO):
        def readline(self, size=-1):
            sizes.append(size)
            return super().readline(size)

    data = b"a" * 10 + b"\n" + b"b" * (5 * containers.SKIP_CHUNK) + b"\n" + b"c\n"
    got = list(containers.lines(Watched(data), 100))
    assert got[0] == b"a" * 10 + b"\n" and got[2] == b"c\n"
    assert isinstance(got[1], containers.LongLine)
    assert got[1].size == 5 * containers.SKIP_CHUNK + 1
    assert 0 < max(sizes) <= containers.SKIP_CHUNK and -1 not in sizes


def test_the_label_import_refuses_a_long_line_naming_it_and_reads_on(tmp_path, line_limit):
    good = {"conversation": "c1", "turn": 1, "annotator": "alice", "labels": [], "group": "g"}
    long = {**good, "note": "n" * 5000}
    for name, packed in (("l.jsonl", False), ("l.jsonl.gz", True)):
        data = jsonl_text(good, long, good).encode()
        path = tmp_path / name
        path.write_bytes(gzip.compress(data) if packed else data)
        rows = [(n, e) for n, _, e in read_label_lines(path)]
        assert rows == [(1, ""), (2, LONG), (3, "")]


def test_a_session_log_refuses_a_long_line_and_keeps_the_session(study, files, line_limit):
    lines_ = claude_code_session()
    lines_.insert(2, {"type": "summary", "summary": "z" * 5000})
    path = files.jsonl("session.jsonl", *lines_)
    report = import_files(study, [path])
    # the line is left out of the session, which is imported: a warning, no rejected record
    assert report.warnings == [f"{path}:3: {LONG}; the line is left out"]
    assert (report.conversations, report.rejected) == (1, 0)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_the_swechat_index_refuses_a_long_line(study, files, line_limit, packed):
    rows = session_rows("s1")
    rows[6]["content"] = "r" * 5000
    path = files.jsonl("swe.jsonl", *rows)
    if packed:
        path = files.gzip("swe.jsonl.gz", path)
    report = import_files(study, [path], fmt="swechat")
    assert report.errors == [f"{path}:7: {LONG}"]
    assert report.conversations == 1


def test_an_array_element_over_the_limit_ends_the_file_naming_the_limit(tmp_path, line_limit):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([native(1), native(2, "x" * 5000), native(3)], indent=1))
    items = list(read_json_array(path, chunk_size=64))
    assert items[0].obj == native(1)
    assert [(i.index, i.error) for i in items[1:]] == [
        (1, f"an element longer than {LINE_LIMIT:,} bytes (CARDSORT_MAX_LINE_BYTES) starts at "
            "line 15; the rest of the file is not read")
    ]  # fmt: skip


def test_an_endless_number_in_an_array_is_refused_too(tmp_path, line_limit):
    path = tmp_path / "n.json"
    path.write_text("[" + "1" * 5000)
    (item,) = list(read_json_array(path, chunk_size=64))
    assert item.error.startswith(f"an element longer than {LINE_LIMIT:,} bytes")


def test_a_number_python_cannot_convert_is_a_record_error_not_a_crash(study, files, tmp_path):
    """json refuses an integer of more than 4,300 digits with a plain ValueError, which is no
    JSONDecodeError: it failed the whole import."""
    huge = "9" * 5000
    path = files.raw(
        "d.jsonl", jsonl_text(native(1)) + f'{{"id": {huge}}}\n' + jsonl_text(native(2))
    )
    report = import_files(study, [path])
    assert report.errors == [f"{path}:2: invalid JSON: a number of more than 4,300 digits"]
    assert report.conversations == 2
    array = tmp_path / "d.json"
    array.write_text(f'[{json.dumps(native(3))}, {{"id": {huge}}}]')
    items = list(read_json_array(array))
    assert items[0].obj == native(3)
    assert items[1].error == "invalid JSON: a number of more than 4,300 digits (line 1)"
    labels = tmp_path / "l.jsonl"
    labels.write_text(f'{{"conversation": {huge}}}\n')
    assert [e for _, _, e in read_label_lines(labels)] == [
        "invalid JSON: a number of more than 4,300 digits"
    ]


# -- the decompression limit -------------------------------------------------------------------

LIMIT = 100_000


@pytest.fixture
def small_cap(settings):
    settings.CARDSORT_MAX_DECOMPRESSED_BYTES = LIMIT
    return LIMIT


def many(n: int) -> list[dict]:
    return [native(i, "p" * 200) for i in range(n)]


def test_a_jsonl_gzip_is_read_up_to_the_limit_then_named(study, files, small_cap):
    path = files.gzip("big.jsonl.gz", files.jsonl("big.jsonl", *many(2000)))
    report = import_files(study, [path])
    assert 0 < report.conversations < 2000
    assert report.errors == [f"{path}:{report.conversations + 1}: {too_big(LIMIT)}"]


def test_a_json_array_gzip_stops_at_the_limit(study, files, small_cap):
    path = files.gzip("big.json.gz", files.json("big.json", many(2000)))
    report = import_files(study, [path])
    assert 0 < report.conversations < 2000
    assert report.errors[-1].endswith(too_big(LIMIT))
    assert report.errors[-1].startswith(f"{path}[{report.conversations}]")


def test_the_label_import_stops_at_the_limit(tmp_path, small_cap):
    record = {"conversation": "c1", "turn": 1, "annotator": "alice", "labels": [], "group": "g"}
    path = tmp_path / "l.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl_text(*[record] * 5000).encode()))
    rows = list(read_label_lines(path))
    assert all(e == "" for _, _, e in rows[:-1]) and len(rows) < 5000
    assert rows[-1] == (len(rows), None, too_big(LIMIT))


def test_a_gzip_parquet_is_decompressed_to_disk_only_up_to_the_limit(
    study, files, small_cap, monkeypatch
):
    plain = files.parquet("p.parquet", [native(i, os.urandom(400).hex()) for i in range(400)])
    assert plain.stat().st_size > 2 * LIMIT
    path = files.gzip("p.parquet.gz", plain)
    copies = []
    unlink = os.unlink

    def measured(name):
        copies.append(os.path.getsize(name))
        unlink(name)

    monkeypatch.setattr(containers.os, "unlink", measured)
    report = import_files(study, [path])
    assert report.conversations == 0
    assert report.files_not_read == [
        f"{path}: cannot read the file ({too_big(LIMIT)}); nothing imported from it"
    ]
    assert copies and max(copies) <= LIMIT + (1 << 20)  # the limit and one copy chunk


def test_a_gzip_swechat_jsonl_is_refused_naming_the_limit(study, files, small_cap):
    rows = [r for i in range(300) for r in session_rows(f"s{i}")]
    path = files.gzip("swe.jsonl.gz", files.jsonl("swe.jsonl", *rows))
    report = import_files(study, [path], fmt="swechat")
    assert report.conversations == 0
    assert report.files_not_read == [
        f"{path}: cannot read the file ({too_big(LIMIT)}); nothing imported from it"
    ]


def test_sniffing_a_bomb_of_blanks_stops_at_the_limit(study, files, small_cap):
    path = files.root / "blank.gz"
    path.write_bytes(gzip.compress(b" " * (3 * LIMIT) + b"{}\n"))
    report = import_files(study, [path])
    assert report.files_not_read == [f"{path}: cannot read the file ({too_big(LIMIT)})"]


def test_the_limit_holds_for_what_open_binary_gives(files, small_cap):
    path = files.root / "z.gz"
    path.write_bytes(gzip.compress(b"\0" * (LIMIT + 1)))
    with containers.open_binary(path) as f:
        with pytest.raises(containers.DecompressedTooLarge, match="100,000 bytes"):
            while f.read(4096):
                pass
    path.write_bytes(gzip.compress(b"\0" * LIMIT))  # exactly the limit: read whole
    with containers.open_binary(path) as f:
        assert len(f.read()) == LIMIT


def test_the_default_limits(settings):
    del settings.CARDSORT_MAX_DECOMPRESSED_BYTES
    del settings.CARDSORT_MAX_LINE_BYTES
    settings.CARDSORT_UPLOAD_MAX_BYTES = 7 * 1024 * 1024
    assert containers.max_decompressed_bytes() == 20 * 7 * 1024 * 1024
    assert containers.max_line_bytes() == 64 * 1024 * 1024
    from config import settings as config

    assert config.CARDSORT_MAX_LINE_BYTES == 64 * 1024 * 1024
    assert config.CARDSORT_MAX_DECOMPRESSED_BYTES == 20 * config.CARDSORT_UPLOAD_MAX_BYTES
