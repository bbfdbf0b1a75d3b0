"""What the API's lists cost in queries (issue 25): the same on a study ten times bigger, so
that no list makes a query per row, and its count is the kept figures' where nothing filters
it."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, Conversation
from tests.factories import label, make_conversation, make_group, make_user, token_client

pytestmark = pytest.mark.django_db

LISTS = ["conversations", "disputes", "annotations", "cards"]


def _build(study, start: int, stop: int, group, other, annotators) -> None:
    for i in range(start, stop):
        conversation = make_conversation(study, f"c{i}", n_turns=2, group=group)
        if i % 2:
            Conversation.objects.filter(pk=conversation.pk).assign(other)
        turn = conversation.turns.get(index=1)
        label(turn, annotators[0], *(["code_rollback"] if i % 3 == 0 else []))
        label(turn, annotators[1])


def _costs(users) -> dict[tuple[str, str], int]:
    out = {}
    for who, user in users.items():
        client = token_client(user)
        for name in LISTS:
            url = f"/api/studies/s1/{name}/"
            client.get(url)
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            if response.status_code == 200:
                out[(who, name)] = len(queries.captured_queries)
    return out


def test_the_api_lists_cost_the_same_queries_for_3_or_30_conversations(study, lead):
    """As a lead who annotates in another group (the blindness rule is asked) and as an
    annotator: a third of the cards disputed, half the conversations shared."""
    annotators = [make_user("ann1"), make_user("ann2")]
    group = make_group(study, "g", annotators)
    other = make_group(study, "h", [lead])
    _build(study, 0, 3, group, other, annotators)
    small = _costs({"lead": lead, "annotator": annotators[0]})
    _build(study, 3, 30, group, other, annotators)
    big = _costs({"lead": lead, "annotator": annotators[0]})
    assert ("lead", "conversations") in big and ("annotator", "disputes") in big
    assert big == small


# `NOT (column IN (SELECT ... FROM table` : PostgreSQL cannot turn NOT IN (subquery) into a
# join; once the subquery's rows outgrow work_mem it reads them again for every row (the API's
# labels, 800,000 of them at 1,000,000 conversations, took over 9 minutes to count). Only the
# jobs table, a few rows, is read that way (`visible()`: the imports not done).
NOT_IN = re.compile(r'NOT \((?:"\w+"\.)?"\w+" IN \(SELECT [^()]*? FROM "(\w+)"')
SMALL_TABLES = {"annotation_job"}


def test_no_list_excludes_rows_by_not_in_a_subquery(study, lead):
    """The blindness rule and every list's exclusions are NOT EXISTS (an anti-join), asked
    as a lead who annotates in a group (the rule applies) and as an annotator."""
    annotators = [make_user("ann1"), make_user("ann2")]
    group = make_group(study, "g", annotators)
    other = make_group(study, "h", [lead])
    _build(study, 0, 4, group, other, annotators)
    seen: dict[str, set[str]] = {}
    for user in (lead, annotators[0]):
        client = token_client(user)
        for name in [*LISTS, "consensus", "proposals"]:
            with CaptureQueriesContext(connection) as queries:
                client.get(f"/api/studies/s1/{name}/")
            for query in queries.captured_queries:
                for table in NOT_IN.findall(query["sql"]):
                    seen.setdefault(table, set()).add(name)
    assert set(seen) <= SMALL_TABLES, seen


def test_the_labels_list_is_counted_from_the_kept_figures(study, lead):
    """Unfiltered, for a lead who annotates nothing, the API's list of labels reads its count
    from the kept figures (no COUNT over the labels), and it is the number of current labels,
    a revised one counted once; filtered, or for a lead who annotates, the rows are counted."""
    annotators = [make_user("ann1"), make_user("ann2")]
    group = make_group(study, "g", annotators)
    other = make_group(study, "h", [make_user("ann3")])
    _build(study, 0, 6, group, other, annotators)
    card = Conversation.objects.get(external_id="c0").turns.get(index=2)
    label(card, annotators[0])
    label(card, annotators[0], "code_rollback")  # revised while still open: two rows
    current = Annotation.objects.filter(is_current=True)
    assert Annotation.objects.count() == current.count() + 1
    client = token_client(lead)
    with CaptureQueriesContext(connection) as queries:
        body = client.get("/api/studies/s1/annotations/").json()
    assert body["count"] == current.count() == 13
    counted = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert not [sql for sql in counted if "annotation_annotation" in sql], counted
    body = client.get("/api/studies/s1/annotations/?annotator=ann1").json()
    assert body["count"] == current.filter(annotator__username="ann1").count() == 7
