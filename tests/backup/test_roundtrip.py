"""dump_study then load_study --as into the same database (other rows present, so every id
changes): the copy equals the original row by row (tests/backup/canon.py); and what a load
refuses, with a message naming the record and field, leaving nothing behind."""

import gzip
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation, Conversation, Job, Study
from tests.backup.canon import canonical
from tests.backup.rich import build


@pytest.fixture
def dumped(db, media, tmp_path):
    build("rich")
    path = tmp_path / "rich.jsonl.gz"
    call_command("dump_study", "rich", str(path))
    return path


def _rewrite(path, change):
    lines = gzip.open(path, "rt").read().splitlines()
    lines = change([json.loads(line) for line in lines])
    with gzip.open(path, "wt") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def test_rich_study_round_trips_with_ids_remapped(dumped):
    original = canonical("rich")
    assert all(original[label] for label in original if label != "users"), [
        label for label in original if not original[label]
    ]  # every model of a study has rows in the rich study
    call_command("load_study", str(dumped), "--as", "copy")
    assert set(Study.objects.values_list("slug", flat=True)) == {"rich", "copy"}
    assert Conversation.objects.filter(study__slug="copy").count() == 2
    assert canonical("copy") == original


def test_loading_a_slug_that_exists_is_refused(dumped):
    with pytest.raises(CommandError, match="study 'rich' exists here already.*--as"):
        call_command("load_study", str(dumped))


def test_a_bad_row_rolls_everything_back_and_names_record_and_field(dumped):
    def corrupt(lines):
        block = None
        for line in lines:
            if isinstance(line, dict) and "model" in line:
                block = line
            elif block and block["model"] == "annotation.Annotation" and isinstance(line, list):
                line[block["fields"].index("created_at") + 1] = "yesterday"
                block = None
        return lines

    _rewrite(dumped, corrupt)
    before = (Study.objects.count(), Annotation.objects.count(), Job.objects.count())
    with pytest.raises(CommandError, match=r"annotation.Annotation #\d+: created_at"):
        call_command("load_study", str(dumped), "--as", "copy")
    assert (Study.objects.count(), Annotation.objects.count(), Job.objects.count()) == before


def test_a_truncated_file_is_refused(dumped):
    _rewrite(dumped, lambda lines: lines[:-1])
    with pytest.raises(CommandError, match="ends before its last line: truncated"):
        call_command("load_study", str(dumped), "--as", "copy")
    assert not Study.objects.filter(slug="copy").exists()


def test_a_file_from_a_newer_cardsort_is_refused(dumped):
    def newer(lines):
        lines[0]["migrations"]["annotation"].append("9999_future")
        return lines

    _rewrite(dumped, newer)
    with pytest.raises(CommandError, match="newer cardsort.*annotation.9999_future"):
        call_command("load_study", str(dumped), "--as", "copy")


def test_missing_users_are_created_without_a_usable_password(dumped):
    from django.contrib.auth import get_user_model

    User = get_user_model()
    User.objects.filter(username="ann").update(username="ann-renamed")
    call_command("load_study", str(dumped), "--as", "copy")
    ann = User.objects.get(username="ann")
    assert not ann.has_usable_password()
    assert Study.objects.get(slug="copy").memberships.filter(user=ann).exists()


def test_dash_writes_to_stdout_and_reads_from_stdin(db, media, monkeypatch):
    import io
    import sys

    build("rich")
    original = canonical("rich")
    out = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    call_command("dump_study", "rich", "-")
    data = out.buffer.getvalue()
    assert data[:2] == b"\x1f\x8b"  # gzip, and nothing else on stdout
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    call_command("load_study", "-", "--as", "copy", stdout=io.StringIO())
    assert canonical("copy") == original


def test_a_row_the_database_refuses_is_named_with_its_line(dumped):
    def duplicate_membership(lines):
        at = next(i for i, line in enumerate(lines) if _is_block(line, "annotation.Membership"))
        row = list(lines[at + 1])
        row[0] = 999_999  # another id, the same study and user: the unique pair is broken
        return [*lines[: at + 2], row, *lines[at + 2 :]]

    _rewrite(dumped, duplicate_membership)
    with pytest.raises(
        CommandError, match=r":\d+: annotation.Membership #999999: .*(UNIQUE|unique)"
    ):
        call_command("load_study", str(dumped), "--as", "copy")
    assert not Study.objects.filter(slug="copy").exists()


def _is_block(line, label=None):
    return isinstance(line, dict) and "model" in line and label in (None, line["model"])
