"""The pages of the conversation browser's results (issue 25): the page asked for and how
many conversations match, in a time that does not grow with the study.

Every page lists exactly the conversations today's search finds, in import order (id). With
no filter, their number is the study's kept figure. With any filter (a text, a state, a
model...), it is counted up to `COUNT_CAP`; past it the page says "more than 1,000" and
offers to count them all (`count=all`: the whole search, as before, exact and slower on a
big study: a card state filter counts over every card). An exact count of a text in one
turn in seven reads every matching turn: 41,000 at 100,000 conversations (0.2 s), ten times
that at 1,000,000 (5 s), whatever index finds them.

A text search is answered one of two ways, with the same result:
- **By the index** (db/textsearch.py): every matching turn of the database is found through
  the trigram index, then the conversations that hold one are listed in order. Its cost grows
  with the number of matches: right for a rare text.
- **By a walk**: the conversations that pass the other filters are read in id order, a batch
  at a time, and each batch's turns are checked for the text (by the turns' index on their
  conversation), until enough are found for the page and the count. Its cost grows with how
  far the walk goes, the inverse of the text's share: right for a common text.
PostgreSQL's statistics of the indexed expressions estimate the text's share of the turns
(`db.textsearch.estimated_share`); the cheaper way is taken. SQLite, which has no such
estimate, takes its FTS5 index."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, IntegerField, Max, QuerySet, Value, When, Window

from .db.textsearch import (
    conversations_containing,
    estimated_share,
    index_plan,
    name_contains,
    turn_contains,
)
from .models import Conversation

COUNT_CAP = 1000  # conversations counted; past it the page says "more than COUNT_CAP"
# the walk reads about `need / share` turns, each checked whole (both columns); the index
# reads each of the `share * turns` matches once. Measured on PostgreSQL at 100,000
# conversations: 6 µs a turn walked, 5 µs a match through the index.
WALK_COST, INDEX_COST = 6.0, 5.0
FIRST_BATCH = 1000  # conversations in the walk's first batch
MAX_BATCH = 20_000
SLACK = 1.1  # a batch is sized for the matches still needed at the density seen, plus this


@dataclass(frozen=True)
class Results:
    """One search as asked: the conversations passing every filter but the text (`others`),
    the text (may be empty), whether every match is to be counted, and the number of
    `others` when it is known without counting them (no filter: the kept figures)."""

    others: QuerySet
    text: str = ""
    count_all: bool = False
    total: int | None = None

    @property
    def everything(self) -> QuerySet:
        """The conversations passing every filter, the text's included, in import order."""
        rows = self.others
        if self.text:
            rows = rows.filter(pk__in=conversations_containing(self.text))
        return rows.order_by("id")


def result_page(results: Results, number, per_page: int, way: str | None = None) -> Page:
    """Page `number` of `results`. Its paginator's `count` is the number of results; with
    `capped` set, the number found so far, when there are more than COUNT_CAP (and they were
    not all asked for). `way` forces "index" or "walk" (tests); by default the cheaper."""
    with index_plan(results.text):
        if not results.text and results.total is not None:
            return KnownPages(results.everything, per_page, results.total).get_page(number)
        wanted = _page_number(number)
        if results.count_all or wanted is None:  # below the first: Django's last page
            return ResultPages(results.everything, per_page).get_page(number)
        need = max(COUNT_CAP, wanted * per_page) + 1
        if results.text:
            way = way or _cheaper_way(results.text, need)
            found = _walk(results, need) if way == "walk" else _by_index(results, need)
        else:  # other filters alone: the first `need` in id order
            found = _by_index(results, need)
        return CappedPages(found, per_page, capped=len(found) >= need).get_page(number)


class KnownPages(Paginator):
    """Pages whose number of results is known without counting them (`total`): a page is a
    slice of `conversations`' ids."""

    capped = False

    def __init__(self, conversations: QuerySet, per_page: int, total: int):
        super().__init__(conversations.values_list("pk", flat=True), per_page)
        self.__dict__["count"] = total  # Paginator.count is cached


class CappedPages(Paginator):
    """Pages over the first results found (`found`, ids in order). `capped`: there are more
    than those; the count shown is then "more than COUNT_CAP"."""

    def __init__(self, found: list[int], per_page: int, capped: bool):
        super().__init__(found, per_page)
        self.capped = capped
        self.cap_words = f"{COUNT_CAP:,}"


class ResultPages(Paginator):
    """The pages of a search's results (`conversations`, in their order), every result
    counted, that read a page's ids and the number of results in one query (COUNT(*) OVER
    ()): the matches are found once, where a Paginator counts them, then finds them again for
    the page. A page past the last (or below the first) is Django's: the count, then the page
    it falls back to."""

    capped = False

    def __init__(self, conversations: QuerySet, per_page: int):
        super().__init__(conversations.values_list("pk", flat=True), per_page)
        self.conversations = conversations

    def get_page(self, number) -> Page:
        wanted = _page_number(number)
        if wanted is None:
            return super().get_page(number)
        start = (wanted - 1) * self.per_page
        found = list(
            self.conversations.annotate(total=Window(Count("pk"))).values_list("pk", "total")[
                start : start + self.per_page
            ]
        )
        if not found and wanted > 1:
            return super().get_page(number)
        self.__dict__["count"] = found[0][1] if found else 0  # Paginator.count is cached
        return self._get_page([pk for pk, _ in found], wanted, self)


def _page_number(number) -> int | None:
    """The page asked for: 1 when none or not a whole number (Django's get_page), None when
    below the first (Django's get_page then gives the last)."""
    try:
        wanted = int(number)
    except (TypeError, ValueError):
        return 1
    return wanted if wanted >= 1 else None


def _cheaper_way(text: str, need: int) -> str:
    estimate = estimated_share(text)
    if estimate is None:
        return "index"
    share, turns = estimate
    if share <= 0:
        return "index"
    walked = WALK_COST * need / share
    return "walk" if walked < INDEX_COST * share * turns else "index"


def _by_index(results: Results, need: int) -> list[int]:
    return list(results.everything.values_list("pk", flat=True)[:need])


def _walk(results: Results, need: int) -> list[int]:
    """The first `need` conversations that pass every filter, the text's included, found by
    reading the others in id order, a batch at a time: each batch's query lists its
    conversations with whether their name or a turn holds the text (the turns read by their
    conversation: every turn of the batch is checked, none outside it)."""
    found: list[int] = []
    after, size, seen = 0, FIRST_BATCH, 0
    turn_hit = Case(When(turn_contains(results.text, "turns__"), then=Value(1)), default=0)
    name_hit = Case(When(name_contains(results.text), then=Value(1)), default=0)
    while len(found) < need:
        batch = results.others.filter(pk__gt=after).order_by("id").values("pk")[:size]
        rows = list(
            Conversation.objects.filter(pk__in=batch)
            .values("pk")
            .annotate(
                hit=Max(turn_hit, output_field=IntegerField()),
                named=Max(name_hit, output_field=IntegerField()),
            )
            .order_by("pk")
            .values_list("pk", "hit", "named")
        )
        if not rows:
            break
        found += [pk for pk, hit, named in rows if hit or named]
        after, seen = rows[-1][0], seen + len(rows)
        if len(rows) < size:
            break
        density = max(len(found), 1) / seen
        size = min(MAX_BATCH, max(FIRST_BATCH, int(SLACK * (need - len(found)) / density)))
    return found[:need]
