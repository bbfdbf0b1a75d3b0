"""The browser and the conversation page cost a bounded number of queries, whatever the
number of conversations, groups, turns and labels (10,000 conversations must stay usable;
benchmarks/browse_bench.py measures the text search on PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.factories import ROLLBACK, label, make_group, make_user

from .helpers import browse_url, conversation_url, listed, make_browsable

# what a page costs today, none of it per row or per card: the session, the user, the study
# and the lead's membership; the form's choices (groups; the stamp of the study's
# conversations, and when it changed, the sources, models and languages of the conversations
# and of the turns), the count, the page's ids, its rows, their groups and their states
BROWSE_QUERIES = 14
BROWSE_QUERIES_CACHED = 12
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
    with django_assert_max_num_queries(BROWSE_QUERIES_CACHED):
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
