"""What the lead's and the moderator's pages cost in queries (issue 25, point 3): pinned, and
the same on a study ten times bigger (its conversations, labels, disputes, escalations and
times), so that no page makes a query per row. Their time is benchmarks/pages_bench.py's.

Transaction control (BEGIN, SAVEPOINT, RELEASE) is not counted: SQLite shows a BEGIN that
PostgreSQL does not. Nor is the search's planner setting on PostgreSQL (db/textsearch.index_plan:
random_page_cost for its transaction, put back after), which SQLite has no use for."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import (
    CardState,
    CardStatus,
    CardTime,
    Group,
    Job,
    JobKind,
    Kind,
    Role,
    Turn,
)
from annotation.tasks import run_agreement
from tests.factories import label, make_conversation, make_group, make_user, token_client
from tests.timing.kept import compute_times

pytestmark = pytest.mark.django_db

CONTROL = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")
PLANNER = ("SELECT current_setting('random_page_cost')", "SELECT set_config('random_page_cost'")
HTMX = {"HTTP_HX_REQUEST": "true"}
CODES = ["code_rollback", "ambiguous_instruction"]

# the queries of each page, whatever the study's size
PINNED = {
    # with the episode groups' look-ups (the sessions, the episodes, the episodes' flags)
    # the Jobs panel's a query more for the `times` job listed: the times lock, asked once
    ("lead", "study page"): 25,
    ("lead", "jobs panel"): 11,
    ("lead", "report"): 18,
    # the latest kept tables (a `times` job), a job in progress, the times lock (one query:
    # the lead annotates nothing); no episode time kept, so no episode query
    ("lead", "time per card"): 8,
    # the page and its total in one query (browse_pages), its rows' turns, then their states;
    # on PostgreSQL first the planner's estimate of the text's share, which chooses how to
    # find it
    ("lead", "browser search"): 11 + (2 if connection.vendor == "postgresql" else 0),
    # a page of escalated cards, then of disputed ones: a query and two prefetches each
    ("lead", "moderation queue"): 14,
    ("moderator", "moderation queue"): 14,
    ("lead", "conversations"): 11,
    # the groups with their counts (the kept figures) and people
    ("lead", "groups"): 6,
    # the study's conversations counted once (methods/context.Census), the groups' states from
    # the kept figures: no count per step
    ("lead", "methods text"): 39,
}


def build(study, n: int) -> dict:
    """n conversations of 3 turns, the group's; each first card labelled by both annotators
    (two in five disputed, one in ten escalated: both on the queue's first page), their times; an agreement job run."""
    alice, bob, moderator = make_user("alice"), make_user("bob"), make_user("moderator")
    group = make_group(study, "g1", [alice, bob], moderator=moderator)
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    for i in range(n):
        turn = make_conversation(study, f"c{i}", n_turns=3, group=group).turns.get(index=1)
        if i % 3 == 0:  # the browser's search finds a third of them
            Turn.objects.filter(pk=turn.pk).update(user_text="What about the edge case?")
        differ = i % 5 in (0, 1)  # every tenth of these escalated below
        label(turn, alice, CODES[0])
        label(turn, bob, CODES[1 if differ else 0])
        for user in (alice, bob):
            CardTime.objects.create(turn=turn, annotator=user, active_ms=1000 * (i + 1))
        if i % 10 == 0:
            CardState.objects.filter(turn=turn, group=group).update(status=CardStatus.ESCALATED)
    job = Job.objects.create(
        study=study, kind=JobKind.AGREEMENT, created_by=lead, params={"n_boot": 10}
    )
    run_agreement(job.pk)
    assert Job.objects.get(pk=job.pk).status == "done"
    compute_times(study, lead)  # time per card's kept tables
    return {"lead": lead, "moderator": moderator}


def costs(client, study, users: dict) -> dict:
    slug = [study.slug]
    pages = {
        ("lead", "study page"): (reverse("study", args=slug), {}),
        ("lead", "jobs panel"): (reverse("job_list", args=slug), HTMX),
        ("lead", "report"): (reverse("report", args=slug), {}),
        ("lead", "time per card"): (reverse("lead_card_times", args=slug), {}),
        ("lead", "browser search"): (reverse("lead_browse", args=slug) + "?q=edge+case", {}),
        ("lead", "moderation queue"): (reverse("moderate_queue", args=slug), {}),
        ("moderator", "moderation queue"): (reverse("moderate_queue", args=slug), {}),
        ("lead", "conversations"): (reverse("lead_conversations", args=slug), {}),
        ("lead", "groups"): (reverse("lead_groups", args=slug), {}),
        ("lead", "methods text"): (reverse("report_methods", args=slug), {}),
    }
    out = {}
    for (who, name), (url, headers) in pages.items():
        client.force_login(users[who])
        client.get(url, **headers)  # warm: the session, the caches
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url, **headers)
        assert response.status_code == 200, (name, response.status_code)
        if name == "time per card":  # the kept tables, not every time read again
            assert 'data-times="kept"' in response.text
        sqls = [q["sql"] for q in ctx.captured_queries]
        out[(who, name)] = sum(1 for sql in sqls if not sql.lstrip().startswith(CONTROL + PLANNER))
    return out


@pytest.mark.parametrize("n", [3, 30])
def test_the_lead_and_moderator_pages_cost_the_same_queries_at_any_size(client, study, n):
    users = build(study, n)
    assert costs(client, study, users) == PINNED


def test_the_groups_page_and_api_read_the_groups_counts_from_the_kept_figures(client, study):
    """The lead's groups page and the API's groups list show each group's conversations (and
    the page its cards) from the kept figures: right, and without reading the assignments,
    which grow with the study (issue 25: 360 ms at 1,000,000 conversations)."""
    users = build(study, 3)
    client.force_login(users["lead"])

    group = Group.objects.get(study=study, name="g1")
    conversations = group.conversations.count()
    cards = sum(group.conversations.values_list("n_turns", flat=True))
    with CaptureQueriesContext(connection) as page:
        html = client.get(reverse("lead_groups", args=[study.slug])).content.decode()
    with CaptureQueriesContext(connection) as api:
        body = token_client(users["lead"]).get(f"/api/studies/{study.slug}/groups/").json()
    assert f"{conversations} conversations, {cards} turns assigned." in html
    assert {g["name"]: g["n_conversations"] for g in body}["g1"] == conversations == 3
    sqls = [q["sql"] for q in page.captured_queries + api.captured_queries]
    assert not [sql for sql in sqls if "annotation_assignment" in sql]
