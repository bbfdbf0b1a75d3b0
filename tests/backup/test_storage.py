"""A study's job files are dumped and loaded through the storage (annotation/storage.py), so a
backup works the same with the files in an S3 bucket: here an in-memory storage, with
MEDIA_ROOT left empty. A load that fails stores nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from django.core.files.storage import InMemoryStorage, default_storage
from django.core.management import CommandError, call_command

from annotation import storage
from annotation.models import Job
from tests.backup.canon import canonical
from tests.backup.rich import build

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory_storage(settings, media):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    default_storage.exists("anything")
    assert isinstance(default_storage._wrapped, InMemoryStorage)
    yield
    assert not list(Path(media).rglob("*")), "something was written under MEDIA_ROOT"


def _stored() -> set[str]:
    return {name for top in ("imports", "exports") for name in storage.stored_files(top)}


def test_the_job_files_round_trip_through_the_storage(memory_storage, tmp_path):
    build("rich")
    path = tmp_path / "rich.jsonl.gz"
    call_command("dump_study", "rich", str(path))
    original = canonical("rich")["files"]
    assert original and original[0][2] == (b"a.jsonl:1: bad\n" * 100).hex()
    call_command("load_study", str(path), "--as", "copy")
    assert canonical("copy")["files"] == original
    copy = Job.objects.get(study__slug="copy", result_file__endswith="rejected.txt")
    assert (
        storage.exists(copy.result_file) and copy.result_file == f"imports/{copy.pk}/rejected.txt"
    )


def test_a_load_that_fails_leaves_no_file_behind(memory_storage, tmp_path):
    build("rich")
    path = tmp_path / "rich.jsonl.gz"
    call_command("dump_study", "rich", str(path))
    before = _stored()
    lines = gzip.open(path, "rt").read().splitlines()
    with gzip.open(path, "wt") as out:
        out.writelines(line + "\n" for line in lines[:-1])  # truncated: no last line
    with pytest.raises(CommandError, match="truncated"):
        call_command("load_study", str(path), "--as", "copy")
    assert _stored() == before
