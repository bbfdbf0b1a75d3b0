"""Round-1 blindness in exports: a lead who also annotates never gets a file showing a fellow
annotator's round-1 labels on a card still open in their group. The export job started from
the study page is made blind for whoever started it; the download serves a file to someone
who annotates in the study only when it was made blind for them. The command line is
unrestricted unless asked (--blind-for)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import exports
from annotation.models import Job, Kind, Role
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

AMBIGUOUS, INCOMPLETE, ROLLBACK = "ambiguous_instruction", "incomplete_instruction", "code_rollback"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def eager(settings):
    """The export jobs run in the request (the media fixture is conftest.py's)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def experts(study, lead, alice, bob):
    """The lead annotates in "experts" with alice; bob and carol are students.
    experts c1#1: lead and alice agree (agreed, revealed); c1#2: alice only (open: the lead
    has not labelled it); c1#3: lead only (open: alice has not). students c2#1: bob only
    (open, but the lead does not annotate it)."""
    carol = make_user("carol")
    group = make_group(study, "experts", [lead, alice], kind=Kind.EXPERT)
    students = make_group(study, "students", [bob, carol])
    t1, t2, t3 = make_conversation(study, "c1", n_turns=3, group=group).turns.all()
    (u1,) = make_conversation(study, "c2", n_turns=1, group=students).turns.all()
    label(t1, lead, ROLLBACK)
    label(t1, alice, ROLLBACK)
    label(t2, alice, AMBIGUOUS)
    label(t2, alice, AMBIGUOUS, INCOMPLETE)  # a revision: the raw export has both rows
    label(t3, lead, INCOMPLETE)
    label(u1, bob, ROLLBACK)
    return {"t": [t1, t2, t3], "u": [u1], "carol": carol}


def by_card(rows: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["conversation"], r["turn"]): r for r in rows}


def test_a_file_made_blind_for_the_lead_hides_their_partners_open_cards(
    tmp_path, study, lead, experts
):
    exports.write_gold(study, tmp_path / "gold.jsonl", "jsonl", blind_for=lead)

    rows = by_card(read_jsonl(tmp_path / "gold.jsonl"))
    assert rows[("c1", 1)]["labels_alice"] == [ROLLBACK]  # agreed: no longer blind
    assert rows[("c1", 2)]["labels_alice"] is None  # open: alice's labels hidden
    assert rows[("c1", 3)]["labels_lead"] == [INCOMPLETE]  # their own stay
    assert rows[("c2", 1)]["labels_bob"] == [ROLLBACK]  # a group the lead does not annotate


def test_a_raw_file_made_blind_leaves_out_the_partners_open_rows(tmp_path, study, lead, experts):
    exports.write_raw(study, tmp_path / "raw.jsonl", "jsonl", blind_for=lead)

    rows = read_jsonl(tmp_path / "raw.jsonl")
    seen = {(r["conversation"], r["turn"], r["annotator"]) for r in rows}
    assert ("c1", 2, "alice") not in seen  # neither of alice's two revisions
    assert {("c1", 1, "alice"), ("c1", 3, "lead"), ("c2", 1, "bob")} <= seen
    assert len(rows) == 4  # 6 annotation rows, alice's 2 on c1#2 left out


def test_the_command_line_is_unrestricted_unless_asked(tmp_path, study, lead, experts):
    out = StringIO()
    call_command(
        "export_gold",
        "s1",
        "--format",
        "jsonl",
        "--output",
        str(tmp_path / "all.jsonl"),
        stdout=out,
    )
    call_command(
        "export_gold", "s1", "--format", "jsonl", "--output", str(tmp_path / "blind.jsonl"),
        "--blind-for", "lead", stdout=out,
    )  # fmt: skip

    assert by_card(read_jsonl(tmp_path / "all.jsonl"))[("c1", 2)]["labels_alice"] == [
        AMBIGUOUS,
        INCOMPLETE,
    ]
    assert by_card(read_jsonl(tmp_path / "blind.jsonl"))[("c1", 2)]["labels_alice"] is None
    with pytest.raises(CommandError, match="--blind-for: unknown user 'nobody'"):
        call_command(
            "export_gold", "s1", "--format", "jsonl", "--output", str(tmp_path / "x.jsonl"),
            "--blind-for", "nobody", stdout=out,
        )  # fmt: skip


# -- the export job and its download --------------------------------------------------------


def start_and_download(client, user, study, fmt="csv", raw=False, django_capture=None):
    client.force_login(user)
    data = {"format": fmt, **({"raw": "1"} if raw else {})}
    with django_capture(execute=True):
        client.post(reverse("job_export", args=[study.slug]), data)
    job = Job.objects.order_by("-pk").first()
    return job, client.get(reverse("job_download", args=[study.slug, job.pk]))


def label_cells(frame: pd.DataFrame, user: str) -> list:
    """Every labels_<other> cell that is not empty."""
    others = [c for c in frame.columns if c.startswith("labels_") and c != f"labels_{user}"]
    return [v for c in others for v in frame[c].tolist() if isinstance(v, str) and v]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_lead_who_annotates_downloads_no_label_of_their_partner_before_they_submitted(
    client, study, lead, alice, media, fmt, django_capture_on_commit_callbacks
):
    group = make_group(study, "experts", [lead, alice], kind=Kind.EXPERT)
    turns = list(make_conversation(study, "c1", n_turns=3, group=group).turns.all())
    for turn in turns:
        label(turn, alice, ROLLBACK)  # the lead has labelled none of them yet

    job, response = start_and_download(
        client, lead, study, fmt, django_capture=django_capture_on_commit_callbacks
    )

    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert ROLLBACK.encode() not in body  # in no cell, in no format
    assert job.result["blind_for"] == lead.username


def test_a_lead_who_does_not_annotate_downloads_every_label(
    client, study, lead, alice, bob, media, django_capture_on_commit_callbacks
):
    group = make_group(study, "students", [alice, bob])
    turns = list(make_conversation(study, "c1", n_turns=3, group=group).turns.all())
    for turn in turns:
        label(turn, alice, ROLLBACK)

    job, response = start_and_download(
        client, lead, study, "csv", django_capture=django_capture_on_commit_callbacks
    )

    assert response.status_code == 200
    frame = pd.read_csv(media / job.result_file, dtype=str, keep_default_na=False)
    assert frame["labels_alice"].tolist() == [ROLLBACK] * 3


def test_a_lead_who_annotates_cannot_download_a_file_made_for_someone_else(
    client, study, lead, alice, bob, media, django_capture_on_commit_callbacks
):
    group = make_group(study, "experts", [lead, alice], kind=Kind.EXPERT)
    (turn,) = make_conversation(study, "c1", n_turns=1, group=group).turns.all()
    label(turn, alice, ROLLBACK)
    other = make_user("olga")  # a lead who does not annotate
    study.add_member(other, Role.LEAD, Kind.EXPERT)
    job, response = start_and_download(
        client, other, study, "csv", raw=True, django_capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 200 and ROLLBACK.encode() in b"".join(response.streaming_content)

    client.force_login(lead)
    response = client.get(reverse("job_download", args=[study.slug, job.pk]))

    assert response.status_code == 403
    text = response.content.decode()
    assert "you annotate in this study" in text and "start your own export" in text
    assert ROLLBACK not in text


def test_a_blind_export_reads_no_more_queries(study, lead, experts):
    def queries(**options) -> int:
        with CaptureQueriesContext(connection) as ctx:
            rows = list(exports.gold_rows(study, chunk_size=2, **options))
        assert len(rows) == 4
        return len(ctx.captured_queries)

    assert queries(blind_for=lead) == queries()
