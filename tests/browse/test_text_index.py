"""The browser's text search with an index (issue 25, point 3): the same results as the scan
it replaces (kept here, as it was, for the comparison), found through the index: FTS5
trigram on SQLite, kept by triggers whatever writes the turns; pg_trgm GIN on PostgreSQL
(the `postgres` tests, run with DATABASE_URL)."""

from __future__ import annotations

import dataclasses
import json
from unittest import mock

import pytest
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import browse_pages
from annotation.browse import BrowseFilter, Choices
from annotation.db import textsearch
from annotation.db.textsearch import FTS_TABLE, PG_INDEXES, ensure_text_index, turns_containing
from annotation.importers import import_files
from annotation.models import Conversation, Turn
from tests.factories import make_conversation

from .helpers import browse_url, listed, refresh_index_statistics

on_sqlite = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="SQLite's FTS5 index (the postgres tests: pg_trgm)"
)


# -- today's search, the reference (annotation/browse.py before issue 25) -----------------------


def todays_turns(text: str) -> set[int]:
    found = Q(user_text__icontains=text) | Q(reply_text__icontains=text)
    return set(Turn.objects.filter(found).values_list("pk", flat=True))


def todays_conversations(study, text: str) -> set[int]:
    found = Q(user_text__icontains=text) | Q(reply_text__icontains=text)
    turns = Turn.objects.filter(found, conversation_id=OuterRef("pk"))
    by_name = Q(external_id__icontains=text) | Q(key__icontains=text)
    rows = Conversation.objects.filter(study=study).visible().filter(by_name | Exists(turns))
    return set(rows.values_list("pk", flat=True))


def searched(study, text: str) -> set[int] | None:
    """The browser's search for `text` (the form cleans it: None when it refuses it)."""
    form = BrowseFilter({"q": text}, choices=Choices.read(study), groups=[])
    if not form.is_valid():
        return None
    return set(form.conversations(study).values_list("pk", flat=True))


# -- the property: random texts and queries -----------------------------------------------------

# letters in both cases (ASCII, accented, with a case mapping that is not one to one: ß/ẞ,
# dotted and dotless i, the three sigmas, the Kelvin sign, the title-case digraph), LIKE's
# wildcards and escape, FTS5's quote and operators, spaces, CJK, an emoji, a combining accent
ALPHABET = (
    list("aAbBeEiIkKsSzZ09 .,;:!?-'\"%_\\*()^+{}\n\t")
    + ["é", "É", "è", "ß", "ẞ", "ı", "İ", "σ", "Σ", "ς", "\u212a", "ǅ", "Ǆ", "ǆ", "ﬁ"]
    + ["ö", "Ö", "Я", "я", "中", "文", "😀", "\u0301"]
)
TEXT = st.text(st.sampled_from(ALPHABET), max_size=30)


def _recase(text: str, how: int) -> str:
    return [text, text.upper(), text.lower(), text.swapcase()][how]


@st.composite
def worlds(draw):
    """Turns (user, reply) on 1 to 4 conversations, some edited and a conversation maybe
    deleted afterwards, and queries: pieces of the texts (1 to 8 characters, under and over
    the index's 3) in their case or another, and random ones."""
    turns = draw(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=8))
    sources = [t for pair in turns for t in (*pair, pair[0] + pair[1]) if t]
    queries = []
    for _ in range(draw(st.integers(1, 6))):
        if sources and draw(st.integers(0, 3)):
            source = draw(st.sampled_from(sources))
            start = draw(st.integers(0, len(source) - 1))
            end = draw(st.integers(start + 1, min(len(source), start + 8)))
            queries.append(_recase(source[start:end], draw(st.integers(0, 3))))
        else:
            queries.append(draw(st.text(st.sampled_from(ALPHABET), min_size=1, max_size=8)))
    n_conversations = draw(st.integers(1, 4))
    edits = draw(st.lists(st.tuples(st.integers(0, 7), TEXT), max_size=2))
    drop = draw(st.sampled_from([None, 0]))
    return turns, n_conversations, edits, drop, queries


def check_same_results(study, world) -> None:
    """Write the world's turns (bulk, then some edited, a conversation maybe deleted: the
    index follows every write), then each query's turns and conversations as today's."""
    turns, n_conversations, edits, drop, queries = world
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # the planner takes the index where it can; its costs then pass the JIT's
                # threshold, whose compiling would take a second a query
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute("SET LOCAL jit = off")
        conversations = [
            Conversation.objects.create(
                study=study, external_id=f"#{i}", source_format="native", n_turns=0
            )
            for i in range(n_conversations)
        ]
        Turn.objects.bulk_create(
            Turn(
                conversation=conversations[i % n_conversations],
                index=i // n_conversations + 1,
                user_text=user,
                reply_text=reply,
            )
            for i, (user, reply) in enumerate(turns)
        )
        pks = list(Turn.objects.order_by("pk").values_list("pk", flat=True))
        for which, text in edits:
            Turn.objects.filter(pk=pks[which % len(pks)]).update(reply_text=text)
        if drop is not None and n_conversations > 1:
            conversations[drop].delete()
        for query in queries:
            assert set(turns_containing(query).values_list("pk", flat=True)) == todays_turns(
                query
            ), query
            found = searched(study, query)
            if found is not None and query.strip():
                assert found == todays_conversations(study, query.strip()), query
                check_pages(study, query, sorted(found))
        transaction.set_rollback(True)


def check_pages(study, query: str, expected: list[int]) -> None:
    """Page after page of one result a page, counted up to a cap of 2 (so that a world of a
    few conversations passes it) and walked a conversation at a time: each way lists every
    result in order, says "more than 2" exactly while more than max(2, the pages so far)
    are left to find, and counts them all when asked."""
    form = BrowseFilter({"q": query}, choices=Choices.read(study), groups=[])
    assert form.is_valid(), form.errors
    results = form.results(study)
    with (
        mock.patch.object(browse_pages, "COUNT_CAP", 2),
        mock.patch.object(browse_pages, "FIRST_BATCH", 1),
    ):
        for way in ["index", "walk"]:
            listed_ids, number = [], 1
            while True:
                page = browse_pages.result_page(results, number, 1, way=way)
                listed_ids += list(page)
                capped = len(expected) > max(2, number)
                assert page.paginator.capped == capped, (query, way, number)
                if not capped:
                    assert page.paginator.count == len(expected), (query, way, number)
                if not page.has_next():
                    break
                number += 1
            assert listed_ids == expected, (query, way)
        everything = dataclasses.replace(results, count_all=True)
        assert browse_pages.result_page(everything, 1, 1).paginator.count == len(expected)


SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])


@on_sqlite
@SETTINGS
@given(world=worlds())
def test_the_indexed_search_finds_what_the_scan_found_on_sqlite(study, world):
    check_same_results(study, world)


@pytest.mark.postgres
@SETTINGS
@given(world=worlds())
def test_the_indexed_search_finds_what_the_scan_found_on_postgresql(study, world):
    check_same_results(study, world)


def test_the_wildcards_and_the_escape_are_plain_characters(lead_client, study):
    make_conversation(study, "c1")
    make_conversation(study, "c2")
    texts = {"c1": "a discount of 50%_off\\now", "c2": "a discount of 500 off now"}
    for key, text in texts.items():
        Turn.objects.filter(conversation__key=key, index=1).update(user_text=text)
    for query, expected in [("50%_off\\", {"c1"}), ("0%_", {"c1"}), ("500 OFF", {"c2"})]:
        assert listed(lead_client.get(browse_url(), {"q": query})) == expected, query


# -- SQLite: the FTS5 index is asked, and kept by every path that writes turns -----------------


def _plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


def _form(study, text: str) -> BrowseFilter:
    form = BrowseFilter({"q": text}, choices=Choices.read(study), groups=[])
    assert form.is_valid(), form.errors
    return form


@on_sqlite
def test_the_search_asks_the_fts5_index_on_sqlite(study):
    make_conversation(study, "c1")
    plan = _plan(_form(study, "function number").conversations(study))
    assert "VIRTUAL TABLE INDEX" in plan and FTS_TABLE in plan, plan


@on_sqlite
def test_a_text_under_3_characters_is_scanned_with_todays_results(study):
    make_conversation(study, "c1")
    Turn.objects.filter(conversation__key="c1", index=2).update(reply_text="x = Ab")
    plan = _plan(_form(study, "ab").conversations(study))
    assert FTS_TABLE not in plan, plan
    assert searched(study, "ab") == todays_conversations(study, "ab") != set()


def _fts_rows(text: str) -> set[int]:
    """The turns the FTS5 index alone says hold `text`."""
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT rowid FROM "{FTS_TABLE}" WHERE "{FTS_TABLE}" MATCH %s',
            [textsearch.fts_phrase(text)],
        )
        return {row[0] for row in cursor.fetchall()}


@on_sqlite
def test_the_index_follows_inserts_updates_and_deletes(study):
    conversation = make_conversation(study, "c1", n_turns=2)
    first, second = conversation.turns.order_by("index")
    assert _fts_rows("function number 2") == {second.pk}
    Turn.objects.filter(pk=first.pk).update(user_text="an Edge Case here")
    assert _fts_rows("edge case") == {first.pk}
    assert _fts_rows("function number 1") == set()
    turn = Turn.objects.get(pk=second.pk)
    turn.reply_text = "another edge case"
    turn.save()
    assert _fts_rows("edge case") == {first.pk, second.pk}
    conversation.delete()  # the turns go by cascade
    assert _fts_rows("edge case") == set()
    with connection.cursor() as cursor:
        cursor.execute(f'INSERT INTO "{FTS_TABLE}" ("{FTS_TABLE}") VALUES (\'integrity-check\')')


@on_sqlite
def test_an_import_leaves_the_index_right(study, tmp_path):
    path = tmp_path / "wildchat.jsonl"
    records = [
        {
            "conversation_hash": f"h{i}",
            "model": "gpt-4",
            "conversation": [
                {"role": "user", "content": f"question {i}: an edge case?" if i % 2 else "hi"},
                {"role": "assistant", "content": f"answer {i}"},
            ],
        }
        for i in range(6)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    report = import_files(study, [path], fmt="wildchat")
    assert report.conversations == 6, report.errors
    expected = todays_turns("edge case")
    assert len(expected) == 3 and _fts_rows("edge case") == expected
    assert searched(study, "EDGE CASE") == todays_conversations(study, "EDGE CASE")


@on_sqlite
@pytest.mark.django_db(transaction=True)
def test_a_rebuilt_turn_table_gets_its_triggers_back_after_migrate(study):
    """Django's SQLite schema editor rebuilds a table to alter it and drops its triggers
    with the old one: after `migrate` (post_migrate) they are back and the index right."""
    from django.core.management.sql import emit_post_migrate_signal, emit_pre_migrate_signal

    make_conversation(study, "c1", n_turns=1)
    emit_pre_migrate_signal(verbosity=0, interactive=False, db="default")
    with connection.schema_editor() as editor:
        editor._remake_table(Turn)  # what AlterField on Turn does on SQLite
    Turn.objects.filter(conversation__key="c1").update(user_text="written unseen: edge case")
    assert _fts_rows("edge case") == set()  # no trigger: the index is stale
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    assert _fts_rows("edge case") == todays_turns("edge case") != set()
    Turn.objects.filter(conversation__key="c1").update(user_text="and then: an edge case")
    assert _fts_rows("then") == todays_turns("then") != set()
    assert ensure_text_index(connection) == []


# -- PostgreSQL: the trigram indexes answer the search ------------------------------------------


@pytest.mark.postgres
def test_the_search_uses_the_trigram_indexes_on_postgresql(study):
    """9,000 turns: enough for the planner to prefer the turns' indexes to a scan."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    conversations = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"c{i}", key=f"c{i}", source_format="native")
        for i in range(3000)
    )
    Turn.objects.bulk_create(
        Turn(
            conversation=c,
            index=t,
            user_text=" ".join(words[(i * 3 + t + k) % 8] for k in range(40)),
            reply_text="an edge case" if i == 7 and t == 2 else f"reply {i} {t} " * 20,
        )
        for i, c in enumerate(conversations)
        for t in (1, 2, 3)
    )
    refresh_index_statistics()
    rows = _form(study, "Edge Case").conversations(study)
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        turns = [name for name in PG_INDEXES if name.startswith("annotation_turn")]
        for name in turns:
            assert f"Bitmap Index Scan on {name}" in plan, plan
        # 3,000 short names: a scan is cheaper yet; the indexes serve when it is not
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        for name in PG_INDEXES:
            assert f"Bitmap Index Scan on {name}" in plan, plan
        cursor.execute("SET LOCAL enable_seqscan = on")
    assert list(rows.values_list("external_id", flat=True)) == ["c7"]
    assert searched(study, "Edge Case") == todays_conversations(study, "Edge Case")
