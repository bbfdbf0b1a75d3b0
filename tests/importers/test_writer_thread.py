"""The writer thread (PostgreSQL COPY): batch N is written on its own connection while the
next batch is read. It must store, reject and count exactly what the plain writer does.

These tests need committed rows, which a second connection can see: `transactional_db` on
PostgreSQL (inside a test transaction the writer never starts a thread)."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import transaction

from annotation.db.options import WriterOptions
from annotation.importers import ImportReport, import_files
from annotation.importers import writer as writer_module
from annotation.importers.base import BuiltConversation, BuiltTurn
from annotation.models import Conversation
from tests.factories import make_study

from .conftest import stored

COPY = WriterOptions(copy=True, thread=True)

pytestmark = pytest.mark.postgres


def native(cid: str, text: str) -> dict:
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return {"id": cid, "messages": messages, "metadata": {"k": [1, None], "score": 0.5}}


@pytest.fixture
def writes(monkeypatch):
    """The names of the threads that wrote each batch."""
    names: list[str] = []
    real = writer_module.Writer._copy

    def spy(self, *payload):
        names.append(threading.current_thread().name)
        return real(self, *payload)

    monkeypatch.setattr(writer_module.Writer, "_copy", spy)
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    return names


def test_the_thread_stores_rejects_and_counts_what_the_plain_writer_does(
    transactional_db, files, monkeypatch, writes
):
    records = [native(f"c{i}", f"question {i}") for i in range(7)]
    records[5] = native("c1", "the same id again")  # a duplicate, two batches later
    path = files.jsonl("a.jsonl", *records, "not json", native("c9", "after the bad line"))
    results = {}
    for threaded in (False, True):
        writes.clear()
        study = make_study(f"s-{threaded}".lower())
        options = WriterOptions.for_connection(thread=threaded)
        report = import_files(study, [path], writer_options=options)
        assert writes and all(name.startswith("import-writer") == threaded for name in writes), (
            writes
        )
        results[threaded] = (stored(study), report.as_dict())
        # a re-import finds every record already there, the batch in flight too
        again = import_files(study, [path], writer_options=options)
        assert (again.conversations, again.already_imported) == (0, report.conversations)
    assert results[True] == results[False]
    report = results[True][1]
    assert (report["conversations"], report["rejected"]) == (7, 2)
    assert any("duplicate id 'c1' (first seen at" in e for e in report["errors"])
    assert not [t for t in threading.enumerate() if t.name.startswith("import-writer")]


def built(cid: str, user_text: str = "q") -> BuiltConversation:
    turn = BuiltTurn(index=1, user_text=user_text, reply_text="a", reply_missing=False)
    return BuiltConversation(
        external_id=cid,
        source_format="native",
        source_file="a.jsonl",
        source_line=1,
        location=f"a.jsonl:{cid}",
        system_prompt="",
        preamble=[],
        metadata={},
        turns=[turn],
        check_duplicate=False,
    )


def test_a_batch_refused_in_the_thread_is_retried_record_by_record(transactional_db, writes):
    report = ImportReport()
    writer = writer_module.Writer(make_study(), report, options=COPY)
    assert writer.threaded
    for conversation in (built("c1"), built("c2", user_text="a\x00b"), built("c3")):
        writer.add(conversation)
    writer.flush()
    writer.close()
    assert set(Conversation.objects.values_list("external_id", flat=True)) == {"c1", "c3"}
    assert (report.conversations, report.turns, report.rejected) == (2, 2, 1)
    assert report.errors[0].startswith("a.jsonl:c2: the database refused it")
    assert all(name.startswith("import-writer") for name in writes)


def test_an_error_in_the_thread_fails_the_import(transactional_db, files, monkeypatch, writes):
    real = writer_module.Writer._copy
    calls = []

    def second_fails(self, *payload):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(self, *payload)

    monkeypatch.setattr(writer_module.Writer, "_copy", second_fails)
    path = files.jsonl("a.jsonl", *(native(f"c{i}", f"q{i}") for i in range(9)))
    with pytest.raises(RuntimeError, match="disk full"):
        import_files(make_study(), [path])
    # stopped at the failed batch, and the thread is gone
    assert len(calls) == 2
    assert Conversation.objects.count() == 2
    assert not [t for t in threading.enumerate() if t.name.startswith("import-writer")]


def test_an_error_while_reading_waits_for_the_batch_in_flight(
    transactional_db, files, monkeypatch, writes
):
    # the job's clean-up (Job.remove_partial_import) must find every row written
    path = files.jsonl("a.jsonl", *(native(f"c{i}", f"q{i}") for i in range(5)))

    def broken_keep(conversation):
        if conversation.external_id == "c3":
            raise OSError("the upload vanished")
        return True

    with pytest.raises(OSError, match="vanished"):
        import_files(make_study(), [path], keep=broken_keep)
    assert Conversation.objects.count() == 2  # c0, c1: the batch that was in flight
    assert not [t for t in threading.enumerate() if t.name.startswith("import-writer")]


def test_progress_never_runs_ahead_of_the_database(transactional_db, files, writes):
    lines = [json.dumps(native(f"c{i}", f"question {i}")) + "\n" for i in range(9)]
    path = files.raw("a.jsonl", "".join(lines))
    ends = [sum(len(line.encode()) for line in lines[: i + 1]) for i in range(len(lines))]
    seen = []

    def progress(done, total):
        in_database = Conversation.objects.count()
        read = sum(1 for end in ends if end <= done)
        seen.append((done, in_database))
        assert in_database >= read, (done, in_database, read)

    import_files(make_study(), [path], progress=progress)
    assert seen[-1] == (ends[-1], 9)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert any(name.startswith("import-writer") for name in writes)


def test_no_thread_inside_a_transaction(transactional_db):
    study = make_study()
    assert writer_module.Writer(study, ImportReport(), options=COPY).threaded
    with transaction.atomic():
        # a second connection would not see the study row of an uncommitted transaction
        assert not writer_module.Writer(study, ImportReport(), options=COPY).threaded
    assert not writer_module.Writer(study, ImportReport(), options=COPY, dry_run=True).threaded
