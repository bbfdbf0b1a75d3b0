"""Time per card from kept tables (issue 25, point 2): a `times` job computes the lead's
tables over the whole study (every annotator's times, nothing hidden) and keeps them; the
page reads the latest, says when it was computed and offers to compute it again. Those
tables count everyone's times, so a lead who annotates a card still hidden from them gets
their own tables computed live, never the kept ones, and no route to the job's result (its
page, the Jobs panel, the API) gives it to them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.models import CardTime, Job, JobKind, JobStatus, Kind, Role
from annotation.timing import (
    NO_SMELL,
    card_time_tables,
    study_tables,
    tables_from_result,
    tables_result,
)
from tests.factories import (
    AMBIGUOUS,
    HTMX,
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_user,
    study_url,
    token_client,
)
from tests.timing.kept import compute_times
from tests.timing.test_card_time_page import table, timed

pytestmark = pytest.mark.django_db


def records(tables: dict[str, pd.DataFrame]) -> dict[str, list[dict]]:
    return {name: t.to_dict("records") for name, t in tables.items()}


@pytest.fixture
def world(study, lead, alice, bob):
    """g1: alice and bob, four cards (alice timed on all, bob on two, both labelled some);
    g2: bob and the lead, two cards bob timed and labelled, open for the lead (round 1)."""
    g1 = make_group(study, "g1", [alice, bob], moderator=make_user("moderator"))
    t1, t2, t3, t4 = make_conversation(study, "c1", n_turns=4, group=g1).turns.order_by("index")
    for turn, seconds in ((t1, 10), (t2, 20), (t3, 30), (t4, 40)):
        timed(turn, alice, seconds)
    timed(t1, bob, 60)
    timed(t2, bob, 90)
    label(t1, alice, ROLLBACK)
    label(t2, alice, ROLLBACK)
    label(t3, alice)  # no smell
    label(t4, alice, AMBIGUOUS)
    label(t1, bob, ROLLBACK)
    label(t2, bob)
    g2 = make_group(study, "g2", [bob, lead])
    u1, u2 = make_conversation(study, "c2", n_turns=2, group=g2).turns.order_by("index")
    timed(u1, bob, 7)
    timed(u2, bob, 8)
    label(u1, bob, AMBIGUOUS)
    timed(u2, lead, 5)
    other = make_user("lead2")  # a lead who annotates nothing: nothing is hidden from them
    study.add_member(other, Role.LEAD, Kind.EXPERT)
    return {"lead": lead, "other": other, "cards": (t1, t2, t3, t4, u1, u2)}


def get_page(client, user) -> str:
    client.force_login(user)
    response = client.get(study_url("lead_card_times"))
    assert response.status_code == 200
    return response.text


def test_the_job_keeps_the_whole_studys_tables_rows_per_annotator_and_type(study, world):
    job = compute_times(study, world["other"])

    kept = tables_from_result(job.result["cards"])
    assert records(kept) == records(study_tables(study, None))
    # every time and label: bob's 7 and 8 s on the lead's open cards included
    assert {r["annotator"]: r["n"] for r in job.result["cards"]["annotator"]} == {
        "alice": 4,
        "bob": 4,
        "lead": 1,
    }
    assert job.result["times_read"] == {"cards": 9, "episodes": 0}
    assert job.result["computed_at"]
    # rows per annotator and type, never per card
    for rows in job.result["cards"].values():
        for row in rows:
            assert set(row) <= {"annotator", "type", "n", "median_ms", "p90_ms"}


times_rows = st.lists(
    st.tuples(
        st.sampled_from(["ann", "bea", "cy"]),
        st.integers(1, 12),
        st.integers(1, 600_000),
        st.lists(st.sampled_from([ROLLBACK, AMBIGUOUS, NO_SMELL]), max_size=2, unique=True),
    ),
    max_size=30,
    unique_by=lambda r: (r[0], r[1]),
)


@settings(max_examples=60, deadline=None)
@given(times_rows)
def test_kept_tables_read_back_as_the_tables_computed(rows):
    """Whatever the times and labels, the tables a job keeps (as JSON) are read back by the
    page as card_time_tables computed them."""
    times = pd.DataFrame(
        [(a, t, ms) for a, t, ms, _ in rows], columns=["annotator", "turn", "active_ms"]
    )
    labels = pd.DataFrame(
        [(a, t, ty) for a, t, _, types in rows for ty in types],
        columns=["annotator", "turn", "type"],
    )
    tables = card_time_tables(times, labels)
    kept = json.loads(json.dumps(tables_result(tables)))
    assert records(tables_from_result(kept)) == records(tables)


def test_with_no_job_the_page_says_so_and_offers_to_compute(client, study, world):
    html = get_page(client, world["other"])
    assert 'data-times="none"' in html and "No tables computed yet" in html
    assert ">Compute</button>" in html
    assert 'data-table="annotator"' not in html  # no empty tables passing for no time


def test_the_page_shows_the_kept_tables_and_when_they_were_computed(client, study, world):
    job = compute_times(study, world["other"])
    t1 = world["cards"][0]
    CardTime.objects.filter(turn=t1).update(active_ms=999_000)  # after the job: not counted

    html = get_page(client, world["other"])

    assert 'data-times="kept"' in html and f"(job {job.pk})" in html
    assert "from 9 card times" in html and ">Recompute</button>" in html
    assert table(html, "annotator") == [
        ["alice", "4", "25.0 s", "37.0 s"],
        ["bob", "4", "34.0 s", "81.0 s"],
        ["lead", "1", "5.0 s", "5.0 s"],
    ]
    # computed again, the page shows the new figures
    compute_times(study, world["other"])
    assert "999.0 s" in get_page(client, world["other"])


def test_a_lead_with_a_card_hidden_from_them_gets_their_own_tables_live(client, study, world):
    """The kept tables hold bob's 7 and 8 s on the cards the lead labels blind: the lead
    gets tables computed for them (their own 5 s, bob's elsewhere), never those."""
    lead = world["lead"]
    compute_times(study, world["other"])
    timed(world["cards"][4], lead, 3)  # the lead's own, after the job: a live table has it

    html = get_page(client, lead)

    assert 'data-times="live"' in html and 'data-times="kept"' not in html
    assert "Computed for you now" in html and "still in round 1" in html
    assert "Recompute" not in html
    by_annotator = {row[0]: row[1:] for row in table(html, "annotator")}
    assert by_annotator["bob"] == ["2", "75.0 s", "87.0 s"]  # not his 7 and 8 s
    assert by_annotator["lead"] == ["2", "4.0 s", "4.8 s"]  # their own, live (3 and 5 s)
    # nor bob's label on the card he timed 7 s (kept: a row of its own)
    assert [
        r for r in table(html, "annotator-type") if r[:2] == ["bob", "Ambiguous Instruction"]
    ] == []
    kept = get_page(client, world["other"])
    assert ["bob", "Ambiguous Instruction", "1", "7.0 s", "7.0 s"] in table(kept, "annotator-type")


def test_no_route_to_the_job_gives_its_result_to_a_lead_with_a_card_hidden(client, study, world):
    job = compute_times(study, world["other"])
    lead, other = world["lead"], world["other"]
    api, api_other = token_client(lead), token_client(other)
    url = f"/api/studies/{study.slug}/jobs/{job.pk}/"

    answer = api.get(url).json()
    assert answer["result"] is None and "still in round 1" in answer["result_withheld"]
    listed = next(j for j in api.get(f"/api/studies/{study.slug}/jobs/").json()["results"])
    assert listed["id"] == job.pk and listed["result"] is None
    assert api_other.get(url).json()["result"]["cards"]["annotator"]
    assert api.get(url + "download/").status_code == 403

    page = reverse("job_detail", args=[study.slug, job.pk])
    client.force_login(lead)
    partial = client.get(page, **HTMX).text
    assert "Time per card" in partial and "still in round 1" in partial
    assert "Tables of" not in partial and "7000" not in partial
    client.force_login(other)
    assert "Tables of 9 card times" in client.get(page, **HTMX).text


def test_compute_starts_one_job_and_the_page_follows_it(client, study, world):
    other = world["other"]
    client.force_login(other)
    url = study_url("lead_times_compute")

    response = client.post(url, **HTMX)

    job = Job.objects.get(kind=JobKind.TIMES)
    assert job.status == JobStatus.QUEUED and job.created_by == other
    assert response.status_code == 200 and f'id="job-{job.pk}"' in response.text
    assert 'hx-trigger="every 1s"' in response.text  # polled until it ends
    # one at a time: while it is queued, a second click follows the same job
    assert client.post(url).status_code == 302
    assert Job.objects.filter(kind=JobKind.TIMES).count() == 1
    html = get_page(client, other)
    assert f'id="job-{job.pk}"' in html and "No tables computed yet" in html
    # leads only (an annotator: 403), a POST only
    assert client.get(url).status_code == 405
    client.force_login(get_user_model().objects.get(username="alice"))
    assert client.post(url).status_code == 403
    assert Job.objects.filter(kind=JobKind.TIMES).count() == 1
