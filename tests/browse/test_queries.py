"""The browser and the conversation page cost a bounded number of queries, whatever the
number of conversations, groups, turns and labels (10,000 conversations must stay usable;
benchmarks/browse_bench.py measures the text search on PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import browse_pages
from annotation.models import Conversation, Turn
from tests.factories import ROLLBACK, label, make_group, make_user

from .helpers import browse_url, conversation_url, listed, make_browsable

# what a page costs today, none of it per row or per card: the session, the user, the study
# and the lead's membership; the form's choices (groups; the stamp of the study's
# conversations, and when it changed, the sources, models and languages of the conversations
# and of the turns), the count, the page's ids, its rows, their groups, their turns and those
# turns' states
BROWSE_QUERIES = 15
BROWSE_QUERIES_CACHED = 13
# a text searched on PostgreSQL: the planner's estimate of its share of the turns and the
# number of turns, which choose how to find it (browse_pages)
ESTIMATE = 2 if connection.vendor == "postgresql" else 0
CONTROL = ("BEGIN", "SAVEPOINT", "RELEASE", "COMMIT", "ROLLBACK")
PLANNER = ("SELECT current_setting('random_page_cost')", "SELECT set_config('random_page_cost'")
# the same four, then the conversation, its turns, groups (annotators, judges), states,
# the cards hidden from the lead, labels (types), consensus (types), study gold (types);
# splitting: whether it may be split (its assignments), its split proposals, its LLM jobs
CONVERSATION_QUERIES = 20


def _study_with(study, n: int, groups) -> None:
    for i in range(n):
        conversation = make_browsable(
            study,
            f"c{i:03d}",
            n_turns=2,
            groups=[groups[i % len(groups)]],
            source=["wildchat", "lmsys"][i % 2],
            metadata={"model": f"m{i % 4}", "language": ["English", "French"][i % 2]},
            turn_metadata={"language": "English"},
        )
        if i % 3 == 0:
            label(conversation.turns.get(index=1), groups[i % len(groups)].annotators.first())


@pytest.mark.parametrize("n", [5, 60])
def test_the_browser_costs_the_same_queries_for_5_or_60_conversations(
    lead_client, study, n, django_assert_max_num_queries
):
    groups = [make_group(study, f"G{g}", [make_user(f"a{g}")]) for g in range(4)]
    _study_with(study, n, groups)
    with django_assert_max_num_queries(BROWSE_QUERIES):
        response = lead_client.get(browse_url())
    assert listed(response)
    params = {"q": "function", "state": "open", "model": "m1", "min_turns": 1, "page": 1}
    with django_assert_max_num_queries(BROWSE_QUERIES_CACHED + ESTIMATE):
        response = lead_client.get(browse_url(), params)
    assert listed(response)


@pytest.mark.parametrize("n_turns", [2, 25])
def test_the_conversation_page_costs_the_same_for_2_or_25_cards(
    lead_client, study, n_turns, django_assert_max_num_queries
):
    users = [make_user(f"a{i}") for i in range(6)]
    groups = [make_group(study, f"G{g}", users[2 * g : 2 * g + 2]) for g in range(3)]
    conversation = make_browsable(study, "long", n_turns=n_turns, groups=groups)
    for turn in conversation.turns.all():
        for user in users:
            label(turn, user, ROLLBACK)  # every card agreed in every group, with gold
    with django_assert_max_num_queries(CONVERSATION_QUERIES):
        response = lead_client.get(conversation_url(conversation))
    assert response.text.count('data-code="code_rollback"') >= n_turns * 3 * 3


@pytest.mark.parametrize("n", [200, 2000])
@pytest.mark.parametrize("way", ["index", "walk"])
def test_a_common_texts_search_costs_the_same_queries_for_200_or_2000_conversations(
    lead_client, study, n, way, monkeypatch
):
    """A text in every third conversation, past the count's cap (60 here): whichever way
    finds it, the page costs the same queries at both sizes (the walk: as many batches, as
    they are sized by the matches found so far, not by the study)."""
    monkeypatch.setattr(browse_pages, "COUNT_CAP", 60)
    monkeypatch.setattr(browse_pages, "FIRST_BATCH", 50)
    monkeypatch.setattr(browse_pages, "_cheaper_way", lambda text, need: way)
    conversations = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"c{i}", key=f"c{i}", source_format="native")
        for i in range(n)
    )
    Turn.objects.bulk_create(
        Turn(
            conversation=c,
            index=1,
            user_text=f"ask {i}",
            reply_text=f"reply {i}" + (" the edge case" if i % 3 == 0 else ""),
        )
        for i, c in enumerate(conversations)
    )
    lead_client.get(browse_url())  # warm: the form's choices
    with CaptureQueriesContext(connection) as queries:
        response = lead_client.get(browse_url(), {"q": "edge case"})
    assert "More than 60 conversations" in response.text
    counted = [q for q in queries.captured_queries if not q["sql"].startswith(CONTROL + PLANNER)]
    # the index: one query for the page; the walk: two batches of the conversations (the way
    # is given: no estimate asked)
    assert len(counted) == (12 if way == "walk" else 11)
