"""Issue 24 point 6: a label import validates the names it would create accounts and groups
under, record by record (Django's username rules and length, the group name's length), and
a failed import leaves no account, membership, seat, group or assignment it created."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError
from django.db import DataError

from annotation.importers.annotations import import_annotations
from annotation.models import (
    Annotation,
    Assignment,
    Group,
    Job,
    JobKind,
    JobStatus,
    Membership,
)
from annotation.tasks import run_label_import
from tests.factories import make_conversation, make_group

from .test_import_annotations import run

pytestmark = pytest.mark.django_db
# the module (the package's `annotations` name is the __future__ feature)
label_import = sys.modules["annotation.importers.annotations"]

USERNAME_CHARS = (
    "Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ "
    "characters."
)


def write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rec(annotator: str, group: str = "trio", turn: int = 1, **more) -> dict:
    return {"conversation": "c7", "turn": turn, "annotator": annotator, "labels": [],
            "group": group, **more}  # fmt: skip


def everything() -> dict:
    """Every row an import may create, as comparable sets."""
    return {
        "users": set(get_user_model().objects.values_list("username", flat=True)),
        "groups": set(Group.objects.values_list("name", flat=True)),
        "members": set(Membership.objects.values_list("study_id", "user_id", "role")),
        "annotators": set(Group.annotators.through.objects.values_list("group_id", "user_id")),
        "judges": set(Group.judges.through.objects.values_list("group_id", "user_id")),
        "assignments": set(Assignment.objects.values_list("conversation_id", "group_id")),
        "labels": Annotation.objects.count(),
    }


@pytest.fixture
def c7(study):
    return make_conversation(study, "c7", n_turns=3)


def test_a_bad_annotator_or_group_name_is_a_record_error_and_creates_nothing(tmp_path, c7):
    path = write(
        tmp_path / "a.jsonl",
        rec("a" * 300),
        rec("<script>alert(1)</script>"),
        rec("=cmd|' /C calc'!A0"),
        rec("ann|bob"),
        rec("dora", group="g" * 101),
        rec("dora"),
        rec("emil", group="g|h"),
    )
    before = everything()

    out, err = run("s1", str(path), "--create-members")

    assert err.splitlines() == [
        f"{path}:1: annotator: Ensure this value has at most 150 characters (it has 300).",
        f"{path}:2: annotator: {USERNAME_CHARS}",
        f"{path}:3: annotator: {USERNAME_CHARS}",
        f"{path}:4: annotator: {USERNAME_CHARS}",
        f"{path}:5: group: Ensure this value has at most 100 characters (it has 101).",
    ]
    assert "2 records imported, 5 rejected, 2 annotators created, 2 groups created" in out
    after = everything()
    assert after["users"] - before["users"] == {"dora", "emil"}
    assert after["groups"] - before["groups"] == {"trio", "g|h"}


def test_an_import_of_which_nothing_lands_leaves_nothing_it_created(tmp_path, study, c7, alice):
    """Every record is refused by the round rules (round 2 of an open card), after the first
    pass created two accounts, a group, memberships, seats and an assignment."""
    existing = make_group(study, "g1", annotators=[alice])
    make_conversation(study, "c8", group=existing)
    path = write(
        tmp_path / "a.jsonl",
        rec("dora", round=2),
        rec("emil", round=2),
        rec("alice", group="trio", turn=2, round=2),  # an existing user seated in a new group
        {**rec("dora", round=2), "conversation": "c8", "group": "g1"},  # a new seat in g1
    )
    before = everything()

    with pytest.raises(CommandError, match="nothing could be imported"):
        run("s1", str(path), "--create-members")

    assert everything() == before


def test_a_label_import_job_that_imports_nothing_leaves_nothing(tmp_path, study, c7, settings):
    settings.MEDIA_ROOT = tmp_path
    write(tmp_path / "a.jsonl", rec("dora", round=2), rec("emil", round=2))
    files = [{"path": "a.jsonl", "name": "mine.jsonl"}]
    params = {"files": files, "create_members": True}
    job = Job.objects.create(study=study, kind=JobKind.LABEL_IMPORT, params=params)
    before = everything()

    run_label_import(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("Nothing could be imported. 0 records imported, 2 rejected")
    assert "removed" in job.error
    assert job.result["created_users"] == [] and job.result["created_groups"] == []
    assert everything() == before


def test_an_error_while_seating_leaves_nothing(tmp_path, study, c7, monkeypatch):
    """The probe's job failed on a DataError after 7 accounts, 7 memberships and 2 groups:
    whatever fails in the first pass, what it created is rolled back with it."""
    path = write(tmp_path / "a.jsonl", *[rec(f"u{i}", group=f"g{i % 2}") for i in range(8)])
    seat = Group.seat
    calls = []

    def failing(self, user, as_):
        calls.append(user)
        if len(calls) == 7:
            raise DataError("value too long for type character varying(150)")
        return seat(self, user, as_)

    monkeypatch.setattr(Group, "seat", failing)
    before = everything()

    with pytest.raises(DataError):
        import_annotations(study, path, create_members=True)

    assert len(calls) == 7
    assert everything() == before


def test_an_error_before_any_label_lands_leaves_nothing(tmp_path, study, c7, monkeypatch):
    path = write(tmp_path / "a.jsonl", rec("dora"), rec("emil"))

    def broken(*args, **kwargs):
        raise DataError("the database went away")

    monkeypatch.setattr(label_import, "write_batch", broken)
    before = everything()

    with pytest.raises(DataError):
        import_annotations(study, path, create_members=True)

    assert everything() == before


def test_labels_that_landed_before_an_error_keep_what_they_need(tmp_path, study, c7, monkeypatch):
    """Batches commit as they go: the labels of the batches before a failure stay, with the
    accounts, seats and group they were decided with, and importing the file again finishes
    it without duplicating them."""
    path = write(tmp_path / "a.jsonl", rec("dora"), rec("emil"), rec("dora", turn=2))
    write_batch = label_import.write_batch
    calls = []

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise DataError("the database went away")
        return write_batch(*args, **kwargs)

    monkeypatch.setattr(label_import, "write_batch", second_fails)
    with pytest.raises(DataError):
        import_annotations(study, path, create_members=True, batch_size=1)

    group = Group.objects.get(name="trio")
    assert set(group.annotators.values_list("username", flat=True)) == {"dora", "emil"}
    assert Annotation.objects.count() == 1
    monkeypatch.setattr(label_import, "write_batch", write_batch)
    report = import_annotations(study, path, create_members=True, batch_size=1)
    assert (report.imported, report.rejected) == (3, [])
    assert Annotation.objects.count() == 3
