"""Each annotator against the consensus, from the job's result to the report page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.agreement.versus import versus_reference
from annotation.models import Job, JobKind, JobStatus

from .helpers import labelled_study, records_of

pytestmark = pytest.mark.django_db


def test_the_job_result_holds_each_annotator_against_the_consensus(study):
    labelled_study(study)
    result = compute_study_report(study, n_boot=0)
    records, codes, consensus = records_of(study)["smell"]
    assert result["axes"]["smell"]["versus_consensus"] == versus_reference(
        records, consensus, codes, n_boot=0
    )
    # G1 agreed on cards 1, 3 and 5 of six: alice is "right" on exactly those
    alice = result["axes"]["smell"]["versus_consensus"]["alice"]
    assert (alice["n_cards"], alice["accuracy"]) == (3, 1.0)


def test_the_report_page_shows_the_table(client, study, lead):
    labelled_study(study)
    result = compute_study_report(study, n_boot=0)
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, result=result)
    client.force_login(lead)
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    assert "Each annotator against the consensus" in html
    assert "alice: precision, recall, F1 and κ per type" in html
