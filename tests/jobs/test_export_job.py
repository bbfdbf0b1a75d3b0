"""The export job writes MEDIA_ROOT/exports/<job id>/<study>-gold.<format>; only the study's
leads download it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from django.urls import reverse

from annotation.models import Job, JobKind, JobStatus, Role
from annotation.tasks import run_export
from tests.factories import make_study, make_user

pytestmark = pytest.mark.django_db


def start(client, study, fmt="csv", raw=False):
    data = {"format": fmt, **({"raw": "1"} if raw else {})}
    return client.post(reverse("job_export", args=[study.slug]), data)


def download(client, study, job):
    return client.get(reverse("job_download", args=[study.slug, job.pk]))


@pytest.fixture
def exported(client, study, lead, labelled, eager, django_capture_on_commit_callbacks):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        assert start(client, study, "jsonl").status_code == 302
    return Job.objects.get()


def test_it_writes_the_gold_file_and_the_lead_downloads_it(client, study, exported, media):
    job = exported
    assert (job.kind, job.status) == (JobKind.EXPORT, JobStatus.DONE)
    assert job.result_file == f"exports/{job.pk}/s1-gold.jsonl"
    path = media / job.result_file
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 6 == job.result["rows"] == job.progress
    assert rows[0]["consensus"] == ["ambiguous_instruction", "code_rollback"]
    assert rows[3]["labels_alice"] == ["code_rollback"] and rows[3]["labels_bob"] is None
    response = download(client, study, job)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == path.read_bytes()
    assert 'filename="s1-gold.jsonl"' in response["Content-Disposition"]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".part")]


def test_the_page_links_the_download(client, study, exported):
    page = client.get(reverse("study", args=[study.slug])).content.decode()
    assert reverse("job_download", args=[study.slug, exported.pk]) in page
    assert "6 rows" in page


def test_nobody_else_downloads_it(client, study, exported, alice, charlie):
    client.force_login(alice)  # an annotator of the study: told "Leads only"
    assert download(client, study, exported).status_code == 403
    client.force_login(charlie)
    assert download(client, study, exported).status_code == 403
    client.force_login(make_user("erin"))  # not a member at all
    assert download(client, study, exported).status_code == 404


def test_a_job_of_another_study_is_not_found_under_this_one(client, study, lead, exported):
    other = make_study("other")
    other.add_member(lead, Role.LEAD)
    client.force_login(lead)
    assert download(client, other, exported).status_code == 404
    assert client.get(reverse("job_detail", args=[other.slug, exported.pk])).status_code == 404


def test_a_missing_or_unfinished_file_is_a_404(client, study, exported, media):
    (media / exported.result_file).unlink()
    assert download(client, study, exported).status_code == 404
    queued = Job.objects.create(study=study, kind=JobKind.EXPORT, params={"format": "csv"})
    assert download(client, study, queued).status_code == 404


def test_it_exports_parquet_and_raw_annotations(
    client, study, lead, labelled, eager, media, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        start(client, study, "parquet")
        start(client, study, "csv", raw=True)
    raw, gold = Job.objects.order_by("-pk")  # newest first
    frame = pd.read_parquet(media / gold.result_file)
    assert len(frame) == 6 and list(frame["labels_dave"].isna()) == [True] * 4 + [False, True]
    assert raw.result_file.endswith("s1-raw.csv") and raw.params["raw"] is True
    table = pd.read_csv(media / raw.result_file)
    assert len(table) == 13 == raw.result["rows"]  # every annotation row, both rounds


def test_a_redelivered_message_for_an_ended_job_writes_nothing(study, labelled, media):
    job = Job.objects.create(
        study=study, kind=JobKind.EXPORT, status=JobStatus.FAILED, params={"format": "csv"}
    )
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert not (media / "exports" / str(job.pk)).exists()


def test_a_job_left_running_by_a_lost_worker_runs_again_cleanly(study, labelled, media):
    job = Job.objects.create(study=study, kind=JobKind.EXPORT, params={"format": "csv"})
    job.start()
    stale = media / "exports" / str(job.pk) / "s1-gold.csv"
    stale.parent.mkdir(parents=True)
    stale.write_text("half a fi")
    run_export(job.pk)  # redelivered before anyone reaped the job
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.result_file == f"exports/{job.pk}/s1-gold.csv", "the same name, replaced"
    assert [p.name for p in stale.parent.iterdir()] == ["s1-gold.csv"]
    assert len(pd.read_csv(media / job.result_file)) == 6
