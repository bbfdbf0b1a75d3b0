"""Parquet containers: read a batch of rows at a time, errors name `file row N`."""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import containers, import_files
from annotation.importers.sniff import detect_container
from annotation.models import Conversation
from tests.factories import make_study

from .conftest import Files, stored

SLUGS = itertools.count()


def native(i: int, text: str = "write a parser") -> dict:
    return {
        "id": f"n{i}",
        "messages": [
            {"role": "user", "content": f"{text} {i}"},
            {"role": "assistant", "content": "```python\nimport ast\n```"},
        ],
        "metadata": {"source": "test", "n": i},
    }


def test_it_recognises_parquet_by_its_magic_bytes(files):
    path = files.parquet("data.bin", [native(1)])
    assert detect_container(path) == "parquet"


def test_it_imports_parquet_rows_and_names_the_row_of_a_bad_one(study, files):
    rows = [native(i) for i in range(20)]
    rows[17]["messages"][0]["role"] = "robot"
    rows[3]["messages"][1]["content"] = "nul \x00 here"
    path = files.parquet("train-00000.parquet", rows)
    report = import_files(study, [path])
    assert (report.conversations, report.rejected) == (18, 2)
    assert report.errors == [
        f"{path} row 3: messages[1].content: contains a NUL character (\\u0000), which the "
        "database cannot store",
        f"{path} row 17 (id=n17): messages[0]: unknown role 'robot'",
    ]
    assert Conversation.objects.get(external_id="n5").source_line == 5


def test_it_reads_in_batches_with_progress_in_bytes(study, files, monkeypatch):
    monkeypatch.setattr(containers, "PARQUET_BATCH_ROWS", 4)
    batches = []
    real = containers.parquet_file

    def spy(path):
        pf = real(path)
        original = pf.iter_batches

        def iter_batches(batch_size, **kw):
            for batch in original(batch_size=batch_size, **kw):
                batches.append(batch.num_rows)
                yield batch

        pf.iter_batches = iter_batches
        return pf

    monkeypatch.setattr(containers, "parquet_file", spy)
    monkeypatch.setattr("annotation.importers.writer.BATCH_SIZE", 5)
    path = files.parquet("p.parquet", [native(i) for i in range(10)])
    seen = []
    report = import_files(study, [path], progress=lambda done, total: seen.append((done, total)))
    assert report.conversations == 10
    # sniffing reads the first batch; the import every one, never the whole table at once
    assert batches == [4, 4, 4, 2]
    size = path.stat().st_size
    assert seen[-1] == (size, size)
    assert len(seen) >= 3 and seen == sorted(seen)
    assert 0 < seen[0][0] < size


def test_it_names_the_file_of_a_corrupt_parquet(study, files):
    path = files.root / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 50)
    report = import_files(study, [path])
    assert report.conversations == 0
    assert (len(report.files_not_read), report.errors) == (1, [])
    assert report.files_not_read[0].startswith(f"{path}: cannot recognise the format (")
    assert "Parquet" in report.files_not_read[0]


def test_a_parquet_timestamp_column_becomes_iso_text(study, files):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    record = {
        "conversation_hash": "c" * 32,
        "timestamp": dt.datetime(2023, 4, 9, 0, 2, 53, tzinfo=dt.UTC),
        "conversation": [
            {"role": "user", "content": "q", "turn_identifier": 1},
            {"role": "assistant", "content": "a", "turn_identifier": 1},
        ],
        "turn": 1,
    }
    path = files.root / "w.parquet"
    pq.write_table(pa.Table.from_pylist([record]), path)
    report = import_files(study, [path])
    assert report.errors == []
    assert Conversation.objects.get().metadata["timestamp"] == "2023-04-09T00:02:53+00:00"


texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompts=st.lists(texts, min_size=1, max_size=6))
def test_an_array_jsonl_and_parquet_of_the_same_records_give_the_same_conversations(
    db, tmp_path_factory, prompts
):
    records = [native(i, text) for i, text in enumerate(prompts)]
    files = Files(tmp_path_factory.mktemp("same"))
    paths = [
        files.raw("r.json", json.dumps(records)),
        files.jsonl("r.jsonl", *records),
        files.parquet("r.parquet", records),
    ]
    results = []
    for path in paths:
        study = make_study(f"pq-{next(SLUGS)}")
        report = import_files(study, [path])
        assert report.errors == [] and report.conversations == len(records)
        results.append(stored(study))
    assert results[0] == results[1] == results[2]
