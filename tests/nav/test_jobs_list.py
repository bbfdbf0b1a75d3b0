"""The study page's jobs list: newest first, paginated, filtered by kind; an htmx partial,
and the same with plain links and a GET form without JavaScript."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Job, JobKind, JobStatus

from .conftest import HTMX, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(study, lead):
    """40 finished jobs, the newest last: exports, agreements and imports in turn."""
    kinds = [JobKind.EXPORT, JobKind.AGREEMENT, JobKind.IMPORT]
    now = timezone.now()
    out = []
    for i in range(40):
        out.append(
            Job.objects.create(
                study=study,
                kind=kinds[i % 3],
                status=JobStatus.FAILED,
                error=f"error-{i}",
                params={"round": 1, "format": "csv"},
                created_at=now - timedelta(minutes=100 - i),
                created_by=lead,
            )
        )
    return out


def shown(r) -> list[int]:
    return [j.pk for j in r.context["jobs"]]


def test_the_study_page_lists_the_newest_jobs_first_a_page_at_a_time(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("study", study))
    assert shown(r) == [j.pk for j in reversed(jobs)][:10]
    html = r.content.decode()
    assert "page 1 of 4" in html
    assert 'href="?jobs_page=2#jobs-panel"' in html


def test_the_second_page_goes_on_where_the_first_stopped(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("study", study), {"jobs_page": 2})
    assert shown(r) == [j.pk for j in reversed(jobs)][10:20]


def test_it_filters_by_kind_across_pages(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("study", study), {"kind": "agreement"})
    agreements = [j.pk for j in reversed(jobs) if j.kind == JobKind.AGREEMENT]
    assert (len(agreements), shown(r)) == (13, agreements[:10])
    html = r.content.decode()
    assert 'href="?kind=agreement&amp;jobs_page=2#jobs-panel"' in html
    r = client.get(url("study", study), {"kind": "agreement", "jobs_page": 2})
    assert shown(r) == agreements[10:]


def test_the_htmx_list_is_the_panel_alone(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("job_list", study), {"kind": "import", "jobs_page": 1}, **HTMX)
    html = r.content.decode()
    assert r.status_code == 200
    assert html.lstrip().startswith('<section class="panel" id="jobs-panel"')
    assert shown(r) == [j.pk for j in reversed(jobs) if j.kind == JobKind.IMPORT][:10]
    assert f'hx-get="{url("job_list", study)}?kind=import&amp;jobs_page=2"' in html


def test_without_htmx_the_list_url_is_the_study_page(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("job_list", study), {"kind": "export"})
    assert (r.status_code, r["Location"]) == (302, url("study", study) + "?kind=export#jobs-panel")


def test_the_filter_is_a_labelled_get_form(client, study, lead, jobs):
    client.force_login(lead)
    html = client.get(url("study", study), {"kind": "export"}).content.decode()
    assert f'<form method="get" action="{url("study", study)}#jobs-panel"' in html
    assert 'for="id_kind"' in html and '<option value="export" selected>' in html


def test_an_unknown_kind_is_a_clear_error(client, study, lead, jobs):
    client.force_login(lead)
    r = client.get(url("job_list", study), {"kind": "bogus"}, **HTMX)
    assert r.status_code == 422
    assert "Kind: Select a valid choice. bogus is not one of the available choices." in (
        r.content.decode()
    )


def test_only_a_lead_lists_the_jobs(client, study, alice, turns, jobs):
    client.force_login(alice)
    r = client.get(url("job_list", study), **HTMX)
    assert r.status_code == 403 and "Leads only" in r.text


def test_the_list_costs_the_same_queries_however_many_jobs(
    client, study, lead, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    Job.objects.create(study=study, kind=JobKind.EXPORT, status=JobStatus.FAILED, created_by=lead)
    client.force_login(lead)
    with CaptureQueriesContext(connection) as small:
        client.get(url("job_list", study), **HTMX)
    for _ in range(30):
        Job.objects.create(
            study=study, kind=JobKind.EXPORT, status=JobStatus.FAILED, created_by=lead
        )
    with django_assert_max_num_queries(len(small)):
        r = client.get(url("job_list", study), **HTMX)
    assert len(r.context["jobs"]) == 10
