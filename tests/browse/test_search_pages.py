"""The browser's result pages of a text search (issue 25, point 3): every page lists what
today's search finds, in import order, with the number of results, whether the text is
common (in two thirds of the conversations: the hard case for the index) or rare, and the
matches are found once a page (one query gives the page and the count). Past
browse_pages.COUNT_CAP results the page says "more than" and counts them all when asked,
whichever way found them (the index, or the walk in id order). PostgreSQL: the search is
planned on the trigram indexes, and the walk reads the turns by their conversation (the
`postgres` tests, run with DATABASE_URL)."""

from __future__ import annotations

import re

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Count, Window
from django.test.utils import CaptureQueriesContext

from annotation import browse_pages
from annotation.browse import BrowseFilter, Choices
from annotation.browse_pages import ResultPages
from annotation.db.textsearch import estimated_share, index_plan
from annotation.models import Conversation, Job, JobKind, JobStatus, Turn
from annotation.views.browse import PAGE_SIZE

from .helpers import browse_url, refresh_index_statistics
from .test_text_index import todays_conversations

N = 170  # a common text: in two thirds of them, three pages of 50


def ids_listed(response) -> list[int]:
    """The conversations a result page lists, in its order."""
    assert response.status_code == 200, response.status_code
    return [int(pk) for pk in re.findall(r'data-conversation-id="(\d+)"', response.text)]


def count_shown(response) -> int | str:
    """The number of results the page shows, or "more than N" past the count's cap."""
    match = re.search(r'id="result-count">(\d+) conversation', response.text)
    if match:
        return int(match[1])
    match = re.search(r'id="result-count">More than ([\d,]+) conversations', response.text)
    assert match, "no count of results on the page"
    return f"more than {match[1]}"


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
        assert len(searches) <= 1, (page, searches)  # none when it walks


# -- past the cap: "more than", and every match counted when asked ------------------------------

WAYS = ["index", "walk"]


@pytest.fixture
def small_cap(monkeypatch):
    """A cap of 60 results counted (the study of N has 114 for a common text) and a walk in
    batches of 7 conversations (several a page)."""
    monkeypatch.setattr(browse_pages, "COUNT_CAP", 60)
    monkeypatch.setattr(browse_pages, "FIRST_BATCH", 7)
    monkeypatch.setattr(browse_pages, "MAX_BATCH", 20)


def _forced(monkeypatch, way: str) -> None:
    monkeypatch.setattr(browse_pages, "_cheaper_way", lambda text, need: way)


def _next_link(response) -> str | None:
    match = re.search(r'href="\?([^"]*)" rel="next"', response.text)
    return match[1].replace("&amp;", "&") if match else None


@pytest.mark.parametrize("way", WAYS)
def test_past_the_cap_the_page_says_more_than_and_the_next_links_walk_every_result(
    lead_client, study, small_cap, monkeypatch, way
):
    _forced(monkeypatch, way)
    _study_of(study, N, 3)
    expected = _today(study, "edge case")
    assert 100 < len(expected) < 150  # three pages: more than the cap on the first two
    seen, shown, query = [], [], "q=edge+case"
    while query is not None:
        response = lead_client.get(browse_url() + "?" + query)
        seen += ids_listed(response)
        shown.append((count_shown(response), re.search(r"page \d+ of [^<\n]*", response.text)[0]))
        query = _next_link(response)
    assert seen == expected
    # pages 1 and 2 found 61 and 101 results: more than the cap; page 3 reached the end
    assert shown == [
        ("more than 60", "page 1 of at least 2"),
        ("more than 60", "page 2 of at least 3"),
        (len(expected), "page 3 of 3"),
    ]


@pytest.mark.parametrize("way", WAYS)
def test_count_them_all_counts_every_match_on_every_page(
    lead_client, study, small_cap, monkeypatch, way
):
    _forced(monkeypatch, way)
    _study_of(study, N, 3)
    expected = _today(study, "edge case")
    first = lead_client.get(browse_url(), {"q": "edge case"})
    link = re.search(r'href="\?([^"]*)" id="count-all">count them all', first.text)
    assert link, "no link to count every match"
    query, seen = link[1].replace("&amp;", "&"), []
    while query is not None:
        assert "count=all" in query  # the page links keep asking for every match
        response = lead_client.get(browse_url() + "?" + query)
        assert count_shown(response) == len(expected)
        seen += ids_listed(response)
        query = _next_link(response)
    assert seen == expected


@pytest.mark.parametrize("way", WAYS)
def test_under_the_cap_every_way_counts_exactly(lead_client, study, small_cap, monkeypatch, way):
    _forced(monkeypatch, way)
    _study_of(study, N, 10)  # "edge case" in under 60 conversations: the cap
    expected = _today(study, "edge case")
    assert len(expected) < 60
    response = lead_client.get(browse_url(), {"q": "edge case"})
    assert count_shown(response) == len(expected)
    assert ids_listed(response) == expected[:PAGE_SIZE]
    assert 'id="count-all"' not in response.text


def test_the_walk_keeps_the_other_filters(lead_client, study, small_cap, monkeypatch):
    """The walk reads only the conversations the other filters pass (here: at least 3 turns,
    which only every fourth has)."""
    _forced(monkeypatch, "walk")
    _study_of(study, N, 3)
    longer = list(Conversation.objects.filter(study=study).order_by("id")[::4])
    for c in longer:
        Turn.objects.create(conversation=c, index=3, user_text="more", reply_text="edge CASE")
    Conversation.objects.filter(pk__in=[c.pk for c in longer]).update(n_turns=3)
    response = lead_client.get(browse_url(), {"q": "edge case", "min_turns": 3})
    assert ids_listed(response) == sorted(c.pk for c in longer)[:PAGE_SIZE]
    assert count_shown(response) == len(longer)


def test_the_cheaper_way_walks_a_common_text_and_asks_the_index_for_a_rare_one(monkeypatch):
    """The choice, from the estimate of the text's share of the turns (here given): on the
    pages benchmark's studies, "edge case" (13.5% of the turns) walks at 100,000 and at
    1,000,000 conversations; a text in 1% of them, or in 2 turns, asks the index; so does a
    common text on a small study, where the index reads few matches."""
    need = browse_pages.COUNT_CAP + 1

    def way(share, turns):
        monkeypatch.setattr(browse_pages, "estimated_share", lambda text: (share, turns))
        return browse_pages._cheaper_way("edge case", need)

    assert way(0.135, 300_000) == "walk"
    assert way(0.135, 3_000_000) == "walk"
    assert way(0.011, 300_000) == "index"
    assert way(0.0001, 3_000_000) == "index"
    assert way(0.135, 12_000) == "index"
    assert way(0.0, 300_000) == "index"
    monkeypatch.setattr(browse_pages, "estimated_share", lambda text: None)  # SQLite
    assert browse_pages._cheaper_way("edge case", need) == "index"


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
    _common_study(study)
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


def _common_study(study) -> None:
    """4,000 conversations of 3 turns, "edge case" in one turn in seven (as in the pages
    benchmark's study), long replies; the indexes' statistics up to date."""
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
    refresh_index_statistics()


@pytest.mark.postgres
def test_the_estimate_of_a_texts_share_is_near_the_truth_on_postgresql(study):
    _common_study(study)
    share, turns = estimated_share("edge case")
    assert turns == pytest.approx(12_000, rel=0.05)
    assert share == pytest.approx(1 / 7, rel=0.3)
    rare, _ = estimated_share("question 17 2 about")
    assert rare < 0.01
    assert estimated_share("ed") is None  # under 3 characters: no trigram, no estimate


@pytest.mark.postgres
def test_the_walk_reads_the_turns_by_their_conversation_on_postgresql(study):
    """Each batch of the walk reads its conversations' turns by the index on their
    conversation, not through the trigram indexes (which would read every match of the
    database, the cost the walk is there to avoid)."""
    _common_study(study)
    form = BrowseFilter({"q": "edge case"}, choices=Choices.read(study), groups=[])
    assert form.is_valid(), form.errors
    with CaptureQueriesContext(connection) as queries:
        page = browse_pages.result_page(form.results(study), 1, PAGE_SIZE, way="walk")
    assert page.paginator.capped  # 4,000 conversations, a third of them match
    batches = [q["sql"] for q in queries.captured_queries if "MAX(CASE WHEN" in q["sql"]]
    assert batches
    with index_plan("edge case"), connection.cursor() as cursor:
        for sql in batches:
            cursor.execute(f"EXPLAIN {sql}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "annotation_turn_conversation_id" in plan, plan
            assert "_trgm" not in plan, plan
            assert "Seq Scan on annotation_turn" not in plan, plan


# -- no text: no filter at all, or other filters ------------------------------------------------


def test_with_no_filter_every_conversation_is_counted_from_the_kept_figures(lead_client, study):
    """The landing page: every visible conversation, in order, their number exact (the kept
    figures, less an import under way), however many."""
    _study_of(study, N, 3)
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, status=JobStatus.RUNNING)
    hidden = Conversation.objects.filter(study=study).order_by("id")[:5]
    Conversation.objects.filter(pk__in=[c.pk for c in hidden]).update(import_job=job)
    expected = list(
        Conversation.objects.filter(study=study)
        .visible()
        .order_by("id")
        .values_list("pk", flat=True)
    )
    seen, query = [], ""
    while query is not None:
        response = lead_client.get(browse_url() + "?" + query)
        assert count_shown(response) == len(expected) == N - 5
        seen += ids_listed(response)
        query = _next_link(response)
    assert seen == expected


def test_other_filters_past_the_cap_say_more_than_and_count_all_when_asked(
    lead_client, study, small_cap
):
    """A filter other than the text (here: at least 2 turns, which all have) is counted up to
    the cap too; its pages list every result and "count them all" counts them."""
    _study_of(study, N, 3)
    expected = list(
        Conversation.objects.filter(study=study).order_by("id").values_list("pk", flat=True)
    )
    seen, query = [], "min_turns=2"
    shown = []
    while query is not None:
        response = lead_client.get(browse_url() + "?" + query)
        shown.append(count_shown(response))
        seen += ids_listed(response)
        query = _next_link(response)
    assert seen == expected
    assert shown == ["more than 60", "more than 60", "more than 60", N]
    response = lead_client.get(browse_url(), {"min_turns": 2, "count": "all"})
    assert count_shown(response) == N
