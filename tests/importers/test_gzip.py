"""gzip-compressed JSON, JSONL and Parquet, recognised by magic bytes, not by the name."""

from __future__ import annotations

import gzip
import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import import_files
from annotation.importers.sniff import detect_container
from annotation.models import Conversation
from tests.factories import make_study

from .conftest import Files, stored
from .test_swechat import session_rows

SLUGS = itertools.count()


def native(i: int, text: str = "fix my regex") -> dict:
    return {"id": f"g{i}", "messages": [{"role": "user", "content": f"{text} {i}"},
                                        {"role": "assistant", "content": "r'\\d+'"}]}  # fmt: skip


def test_it_recognises_gzip_by_magic_bytes_not_by_name(study, files):
    plain = files.jsonl("plain.jsonl", native(1), native(2))
    hidden = files.gzip("upload-tmp-1a2b", plain)  # an upload's temporary name
    misnamed = files.raw("not-really.jsonl.gz", plain.read_text())
    assert detect_container(hidden) == "jsonl"
    assert detect_container(files.gzip("a.json.gz", files.json("a.json", [native(3)]))) == "array"
    assert detect_container(files.gzip("p.gz", files.parquet("p.parquet", [native(4)]))) == (
        "parquet"
    )
    report = import_files(study, [hidden])
    assert (report.conversations, report.errors) == (2, [])
    other = make_study("s2")
    assert import_files(other, [misnamed]).conversations == 2


def test_a_truncated_gzip_keeps_the_records_before_the_cut(study, files):
    plain = files.jsonl("big.jsonl", *[native(i, "x" * 2000 + str(i)) for i in range(400)])
    whole = gzip.compress(plain.read_bytes())
    path = files.root / "big.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    report = import_files(study, [path])
    assert 0 < report.conversations < 400
    assert report.errors == [
        f"{path}:{report.conversations + 1}: the gzip stream is cut off (the file looks truncated)"
    ]
    cut_array = files.root / "a.json.gz"
    array = gzip.compress(json.dumps([native(i, "y" * 2000) for i in range(400)]).encode())
    cut_array.write_bytes(array[: len(array) // 2])
    other = make_study("s2")
    report = import_files(other, [cut_array])
    assert 0 < report.conversations < 400
    assert report.errors[-1].endswith("the gzip stream is cut off (the file looks truncated)")


def test_a_truncated_gzip_parquet_or_swechat_file_is_named(study, files):
    for name, source in (
        ("p.parquet.gz", files.parquet("p.parquet", [native(i) for i in range(50)])),
        ("c.jsonl.gz", files.jsonl("c.jsonl", *session_rows("s1"))),
    ):
        whole = gzip.compress(source.read_bytes())
        path = files.root / name
        path.write_bytes(whole[: len(whole) - 20])
        report = import_files(study, [path])
        assert report.conversations == 0
        # it cannot be read at all: a file not read, no rejected record
        assert (len(report.files_not_read), report.errors) == (1, [])
        assert report.files_not_read[0].startswith(f"{path}")
        assert "the gzip stream is cut off" in report.files_not_read[0]


def test_gzip_progress_counts_compressed_bytes(study, files):
    plain = files.jsonl("p.jsonl", *[native(i, "z" * 500) for i in range(300)])
    path = files.gzip("p.jsonl.gz", plain)
    seen = []
    import_files(study, [path], progress=lambda done, total: seen.append((done, total)))
    size = path.stat().st_size
    assert seen[-1] == (size, size)
    assert all(done <= total == size for done, total in seen)


texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prompts=st.lists(texts, min_size=1, max_size=5),
    kind=st.sampled_from(["jsonl", "json", "parquet", "swechat"]),
)
def test_gzip_and_plain_give_the_same_import(db, tmp_path_factory, prompts, kind):
    files = Files(tmp_path_factory.mktemp("gz"))
    records = [native(i, t) for i, t in enumerate(prompts)]
    if kind == "jsonl":
        plain = files.jsonl("r.jsonl", *records)
    elif kind == "json":
        plain = files.json("r.json", records)
    elif kind == "parquet":
        plain = files.parquet("r.parquet", records)
    else:
        rows = [r for i in range(len(prompts)) for r in session_rows(f"s{i}")]
        for r, t in zip(rows[1::9], prompts, strict=False):
            r["content"] = t
        plain = files.jsonl("r.jsonl", *rows)
    packed = files.gzip("r.gz", plain)
    results = []
    for path in (plain, packed):
        study = make_study(f"gz-{next(SLUGS)}")
        report = import_files(study, [path])
        assert report.errors == []
        results.append(stored(study))
    assert results[0] == results[1] and results[0]
    assert Conversation.objects.filter(source_file=str(packed)).exists()
