"""The bulk writer's options (annotation/db/options.py) are built once per connection and
passed in: no module switch. What the connection does best by default; what it cannot do is
refused by name."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connection

from annotation.db.options import WriterOptions, WriterOptionsRefused
from annotation.importers import ImportReport, import_files
from annotation.importers import writer as writer_module
from tests.factories import make_study


class _Vendor:
    def __init__(self, vendor: str) -> None:
        self.vendor = vendor


def test_postgresql_gets_copy_and_its_thread_sqlite_bulk_create():
    assert WriterOptions.for_connection(_Vendor("postgresql")) == WriterOptions(True, True, True)
    assert WriterOptions.for_connection(_Vendor("sqlite")) == WriterOptions(False, False, True)
    no_thread = WriterOptions.for_connection(_Vendor("postgresql"), thread=False)
    assert (no_thread.copy, no_thread.thread) == (True, False)
    orm = WriterOptions.for_connection(_Vendor("postgresql"), copy=False)
    assert (orm.copy, orm.thread) == (False, False)


def test_what_a_connection_cannot_do_is_refused_by_name():
    with pytest.raises(
        WriterOptionsRefused, match="COPY needs PostgreSQL; this connection is sqlite"
    ):
        WriterOptions.for_connection(_Vendor("sqlite"), copy=True)
    with pytest.raises(WriterOptionsRefused, match="writer thread .* needs copy=True"):
        WriterOptions.for_connection(_Vendor("postgresql"), copy=False, thread=True)


def test_the_options_are_frozen():
    options = WriterOptions.for_connection(_Vendor("sqlite"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.copy = True


def test_the_writer_takes_the_connections_options_unless_given(db):
    writer = writer_module.Writer(make_study(), ImportReport())
    assert writer.options == WriterOptions.for_connection(connection)
    assert not hasattr(writer_module, "USE_COPY") and not hasattr(writer_module, "THREADED")


def test_without_the_fingerprint_check_a_second_import_is_not_skipped_as_imported(db, tmp_path):
    path = tmp_path / "a.jsonl"
    line = '{"id": "c%d", "messages": [{"role": "user", "content": "q%d"}]}\n'
    path.write_text("".join(line % (i, i) for i in range(3)), encoding="utf-8")
    study = make_study()
    first = import_files(study, [path])
    checked = import_files(study, [path])
    assert (first.conversations, checked.conversations, checked.already_imported) == (3, 0, 3)
    unchecked = WriterOptions.for_connection(check_fingerprints=False)
    again = import_files(study, [path], writer_options=unchecked)
    # the same ids again: not skipped as already imported, refused as duplicate ids instead
    assert (again.already_imported, again.conversations, again.rejected) == (0, 0, 3)
    assert all("duplicate id" in e for e in again.errors)
