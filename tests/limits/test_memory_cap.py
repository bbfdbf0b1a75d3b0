"""Issue 24: hostile files imported by a process under a memory cap (capped.py: RLIMIT_AS
1.5 GB), which must finish with the clear error and a peak RSS under 1 GB. The gzip bomb of
the probe: a 2 MB `.jsonl.gz` holding one 2 GiB line, which took the worker to 8.6 GB for
91 s. The bombs are written from a stream: one compressed megabyte repeated as gzip
members (a gzip file may hold several, read one after the other), never held whole."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.factories import make_study

from .capped import PEAK_RSS_LIMIT, run_capped

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MIB = 1024**2


def write_bomb(path: Path, head: bytes, filler: bytes, mib: int, tail: bytes) -> Path:
    """gzip of head + filler * (mib MiB) + tail, a member at a time: a few KB a GiB."""
    member = gzip.compress(filler * (MIB // len(filler)), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(head))
        for _ in range(mib):
            out.write(member)
        out.write(gzip.compress(tail))
    return path


def record(cid: str, text: str = "hi") -> bytes:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return json.dumps({"id": cid, "messages": messages}).encode() + b"\n"


def assert_bounded(run) -> None:
    assert run.peak_rss < PEAK_RSS_LIMIT, (run.peak_rss, run.stderr[-2000:])
    assert "MemoryError" not in run.stderr and "Traceback" not in run.stderr, run.stderr[-3000:]


def test_the_gzip_bomb_of_one_2_gib_line_is_refused_in_bounded_memory(tmp_path):
    make_study("s1")
    bomb = write_bomb(
        tmp_path / "bomb.jsonl.gz",
        head=b'{"id": "x", "messages": [{"role": "user", "content": "',
        filler=b"a",
        mib=2048,
        tail=b'"}]}\n' + record("y"),
    )
    assert bomb.stat().st_size < 3 * MIB
    run = run_capped(tmp_path, "import_conversations", "s1", str(bomb))
    assert_bounded(run)
    said = run.stdout + run.stderr
    assert f"{bomb}:1: line longer than 67,108,864 bytes (CARDSORT_MAX_LINE_BYTES)" in said
    assert run.returncode == 0, said[-2000:]  # the line after it is imported
    assert "1 conversations" in said


def test_a_label_import_bomb_is_refused_in_bounded_memory(tmp_path):
    make_study("s1")
    bomb = write_bomb(
        tmp_path / "labels.jsonl.gz",
        head=b'{"conversation": "c1", "turn": 1, "annotator": "a", "group": "g", "note": "',
        filler=b"n",
        mib=1024,
        tail=b'"}\n',
    )
    run = run_capped(tmp_path, "import_annotations", "s1", str(bomb))
    assert_bounded(run)
    assert f"{bomb}:1: line longer than 67,108,864 bytes (CARDSORT_MAX_LINE_BYTES)" in run.stderr
    assert run.returncode != 0 and "nothing could be imported" in run.stderr


def test_decompression_stops_at_the_limit_and_the_other_hostile_files_stay_bounded(tmp_path):
    """One capped run over the hostile files of tests/importers, with a decompression limit
    of 64 MiB: a JSONL gzip of 1 GiB, a gzip "Parquet" of 1 GiB (decompressed to disk only
    up to the limit), a record nested 100,000 deep, an array element never closed, a cut-off
    gzip and a 2 GiB JSON array bomb of blanks (elements limited to 16 MiB here)."""
    make_study("s1")
    limit = 64 * MIB
    padded = b'{"id": "p", "messages": []' + b" " * (64 * 1024 - 32) + b"}\n"
    jsonl = write_bomb(tmp_path / "big.jsonl.gz", b"", padded[: 64 * 1024], 1024, b"")
    parquet = write_bomb(tmp_path / "big.parquet.gz", b"PAR1", b"\0", 1024, b"PAR1")
    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(b'{"id": "d", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n" + record("d2"))
    endless = write_bomb(tmp_path / "endless.json.gz", b'[{"id": "e", "x": "', b"e", 512, b"")
    cut = tmp_path / "cut.jsonl.gz"
    whole = gzip.compress(b"".join(record(f"c{i}", "t" * 500) for i in range(200)))
    cut.write_bytes(whole[: len(whole) // 2])
    blanks = write_bomb(tmp_path / "blanks.json.gz", b"[", b" ", 2048, b"]")
    files = [jsonl, parquet, deep, endless, cut, blanks]
    run = run_capped(
        tmp_path,
        "import_conversations",
        "s1",
        "--format",
        "native",
        *map(str, files),
        CARDSORT_MAX_DECOMPRESSED_BYTES=str(limit),
        CARDSORT_MAX_LINE_BYTES=str(16 * MIB),
    )
    assert_bounded(run)
    too_big = (
        f"the file decompresses to more than {limit:,} bytes (CARDSORT_MAX_DECOMPRESSED_BYTES)"
    )
    lines = (run.stdout + run.stderr).splitlines()

    def said(path: Path) -> list[str]:
        return [line for line in lines if line.startswith(str(path))]

    for path in (jsonl, parquet, blanks):
        assert any(too_big in line for line in said(path)), (path, lines[-20:])
    assert any("nested deeper than 100 levels" in line for line in said(deep))
    assert any("an element longer than 16,777,216 bytes" in line for line in said(endless))
    assert any("the gzip stream is cut off" in line for line in said(cut))


def test_the_peak_is_the_childs_own_however_large_the_test_process(tmp_path):
    """Late in the suite the pytest process is large; a child forked from it used to read
    its parent's size as its own peak (ru_maxrss keeps the forked image across exec)."""
    ballast = b"\x01" * (1200 * 1024 * 1024)  # 1.2 GB, every page touched
    run = run_capped(tmp_path, "check")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.peak_rss < PEAK_RSS_LIMIT / 4, run.peak_rss  # Django's check: ~100 MB
    del ballast
