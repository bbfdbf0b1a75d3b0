"""The browser's result pages of a text search (issue 25, point 3): every page lists what
today's search finds, in import order, with the number of results, whether the text is
common (in two thirds of the conversations: the hard case for the index) or rare, and the
matches are found once a page (one query gives the page and the count). PostgreSQL: the
search is planned on the trigram indexes (the `postgres` tests, run with DATABASE_URL)."""

from __future__ import annotations

import re

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Count, Window
from django.test.utils import CaptureQueriesContext

from annotation.browse import BrowseFilter, Choices, ResultPages
from annotation.db.textsearch import PG_INDEXES, index_plan
from annotation.models import Conversation, Turn
from annotation.views.browse import PAGE_SIZE

from .helpers import browse_url
from .test_text_index import todays_conversations

N = 170  # a common text: in two thirds of them, three pages of 50


def ids_listed(response) -> list[int]:
    """The conversations a result page lists, in its order."""
    assert response.status_code == 200, response.status_code
    return [int(pk) for pk in re.findall(r'data-conversation-id="(\d+)"', response.text)]


def count_shown(response) -> int:
    match = re.search(r'id="result-count">(\d+) conversation', response.text)
    assert match, "no count of results on the page"
    return int(match[1])


def _study_of(study, n: int, every: int) -> None:
    """`n` conversations of 2 turns; "edge case" in one turn (user message or reply, in
    varying case) of every `every`-th, and in the external id of a few others."""
    conversations = Conversation.objects.bulk_create(
        Conversation(
            study=study,
            external_id=f"edge-case-{i}" if i % 37 == 5 else f"c{i:04d}",
            key=f"k{i}",
            source_format="native",
            n_turns=2,
        )
        for i in range(n)
    )
    said = ["an Edge Case here", "EDGE CASE!", "the edge case of an empty list"]
    Turn.objects.bulk_create(
        Turn(
            conversation=c,
            index=t,
            user_text=said[i % 3] if i % every == 0 and t == 1 + i % 2 else f"ask {i} {t}",
            reply_text=said[(i + 1) % 3] if i % every == 1 and t == 2 else f"reply {i} {t}",
        )
        for i, c in enumerate(conversations)
        for t in (1, 2)
    )


def _today(study, text: str) -> list[int]:
    return sorted(todays_conversations(study, text))


@pytest.mark.parametrize(
    "text, every",
    [("edge case", 3), ("EDGE CASE", 3), ("edge case", 1000), ("not said anywhere", 3)],
    ids=["common", "common-upper", "rare", "none"],
)
def test_every_page_lists_todays_results_in_order_with_their_number(
    lead_client, study, text, every
):
    _study_of(study, N, every)
    expected = _today(study, text)
    if every == 3 and "not" not in text:
        assert len(expected) > 2 * PAGE_SIZE  # three pages
    seen = []
    for number in range(1, max(1, -(-len(expected) // PAGE_SIZE)) + 1):
        response = lead_client.get(browse_url(), {"q": text, "page": number})
        assert count_shown(response) == len(expected), number
        seen += ids_listed(response)
    assert seen == expected


def test_a_page_out_of_range_or_not_a_number_is_djangos(lead_client, study):
    """Past the last page: the last; 0 or below: the last (Django's get_page); not a number:
    the first."""
    _study_of(study, N, 3)
    expected = _today(study, "edge case")
    reference = Paginator(expected, PAGE_SIZE)
    for asked in ["99", "0", "-1", "abc", "2.5", ""]:
        response = lead_client.get(browse_url(), {"q": "edge case", "page": asked})
        assert ids_listed(response) == list(reference.get_page(asked)), asked
        assert count_shown(response) == len(expected), asked


def test_the_matches_are_found_once_a_page(lead_client, study):
    """The page and the count come from one query: the search's union of the names' and the
    turns' matches is run once (it was run twice: the count, then the page)."""
    _study_of(study, N, 3)
    for page in [{}, {"page": 2}]:  # no page asked (the first), and another
        with CaptureQueriesContext(connection) as queries:
            response = lead_client.get(browse_url(), {"q": "edge case", **page})
        assert len(ids_listed(response)) == PAGE_SIZE
        searches = [q["sql"] for q in queries.captured_queries if "UNION" in q["sql"]]
        assert len(searches) == 1, (page, searches)


# -- PostgreSQL: the plan -----------------------------------------------------------------------


def _windowed_sql(study, text: str) -> tuple[str, list]:
    form = BrowseFilter({"q": text}, choices=Choices.read(study), groups=[])
    assert form.is_valid(), form.errors
    pages = ResultPages(form.conversations(study), PAGE_SIZE)
    query = pages.conversations.annotate(total=Window(Count("pk"))).values_list("pk", "total")
    return query[:PAGE_SIZE].query.sql_with_params()


@pytest.mark.postgres
def test_the_search_page_takes_the_trigram_indexes_for_a_common_text_on_postgresql(study):
    """A text in one turn in seven (as "edge case" in the benchmark's study): the page's one
    query reads the turns through their trigram indexes, not by a scan of every turn."""
    conversations = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"c{i}", key=f"c{i}", source_format="native")
        for i in range(4000)
    )
    reply = "Once upon a time, a fox lived near the river and tried to sing every morning. " * 8
    Turn.objects.bulk_create(
        Turn(
            conversation=c,
            index=t,
            user_text=f"question {i} {t}" + (" about the edge case" if (i + t) % 7 == 0 else ""),
            reply_text=reply,
        )
        for i, c in enumerate(conversations)
        for t in (1, 2, 3)
    )
    with connection.cursor() as cursor:
        for name in PG_INDEXES:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [name])
        cursor.execute("ANALYZE annotation_turn")
        cursor.execute("ANALYZE annotation_conversation")
    sql, params = _windowed_sql(study, "edge case")
    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        (before,) = cursor.fetchone()
    with index_plan("edge case"), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Bitmap Index Scan on annotation_turn_user_text_trgm" in plan, plan
    assert "Seq Scan on annotation_turn" not in plan, plan
    with connection.cursor() as cursor:  # and the setting is put back after the search
        cursor.execute("SHOW random_page_cost")
        assert cursor.fetchone()[0] == before
