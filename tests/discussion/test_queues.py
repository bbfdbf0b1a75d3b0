"""The annotators' "to discuss" queue and the moderators' queue: what each lists, filters,
counts, and a query count that does not grow with the study."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import label, make_conversation, study_url

pytestmark = pytest.mark.django_db


def dispute(turn, a, b, first="ambiguous_instruction", second="must_do_omission"):
    label(turn, a, first)
    label(turn, b, second)


def escalate(turn, a, b, first="ambiguous_instruction", second="must_do_omission"):
    dispute(turn, a, b, first, second)
    label(turn, a, first, round=2)
    label(turn, b, second, round=2)


def rows(html: str, section: str) -> str:
    start = html.index(f'id="{section}"')
    return html[start : html.index("</section>", start)]


def test_it_splits_my_disputed_cards_into_my_turn_and_waiting(client, alice, bob, turns_a):
    t1, t2, t3 = turns_a
    dispute(t1, alice, bob)
    dispute(t2, alice, bob)
    label(t2, alice, "must_do_omission", round=2)  # alice has answered on t2, bob not yet
    label(t3, alice, "code_rollback")  # still round 1: not a card to discuss

    client.force_login(alice)
    html = client.get(study_url("discuss_queue")).content.decode()
    mine, waiting = rows(html, "your-turn"), rows(html, "waiting")
    assert f'data-turn-id="{t1.pk}"' in mine and f'data-turn-id="{t2.pk}"' not in mine
    assert f'data-turn-id="{t2.pk}"' in waiting and f'data-turn-id="{t1.pk}"' not in waiting
    assert f'data-turn-id="{t3.pk}"' not in html
    assert '<span class="count">1</span>' in mine

    client.force_login(bob)
    html = client.get(study_url("discuss_queue")).content.decode()
    assert f'data-turn-id="{t2.pk}"' in rows(html, "your-turn")
    assert '<span class="count">2</span>' in rows(html, "your-turn")


def test_it_lists_escalated_and_disputed_cards_with_filters(client, moderator, alice, bob, turns_a):
    t1, t2, t3 = turns_a
    escalate(t1, alice, bob)
    dispute(t2, alice, bob, "code_rollback", "repetitive_response")
    label(t3, alice, "code_rollback")  # open: never in the moderator's queue either
    client.force_login(moderator)

    def listed(**params) -> set[int]:
        response = client.get(study_url("moderate_queue"), params)
        assert response.status_code == 200
        html = response.content.decode()
        return {t.pk for t in turns_a if f'data-turn-id="{t.pk}"' in html}

    assert listed() == listed(status="all") == {t1.pk, t2.pk}
    assert listed(status="escalated") == {t1.pk}
    assert listed(status="disputed") == {t2.pk}
    assert listed(type="code_rollback") == {t2.pk}
    assert listed(type="must_do_omission") == {t1.pk}
    assert listed(type="signature_mismatch") == set()
    assert listed(group=t1.conversation.groups.get().pk, status="escalated") == {t1.pk}

    html = client.get(study_url("moderate_queue")).content.decode()
    assert '<td class="n-escalated">1</td><td class="n-disputed">1</td>' in html
    # each row shows the labels of the round under way
    assert re.search(r"<strong>alice</strong>: <span [^>]*>Ambiguous Instruction</span>", html)


def test_it_filters_by_a_type_revised_away(client, moderator, alice, bob, turns_a):
    t1 = turns_a[0]
    dispute(t1, alice, bob)
    label(t1, alice, "signature_mismatch", round=2)
    label(t1, alice, "code_rollback", round=2)  # signature_mismatch revised away
    client.force_login(moderator)
    html = client.get(study_url("moderate_queue"), {"type": "signature_mismatch"}).content.decode()
    assert f'data-turn-id="{t1.pk}"' in html


def test_it_refuses_unknown_filter_values(client, moderator, group_a):
    client.force_login(moderator)
    assert client.get(study_url("moderate_queue"), {"status": "agreed-ish"}).status_code == 400
    assert client.get(study_url("moderate_queue"), {"type": "no_such_type"}).status_code == 400


def test_it_paginates_the_moderator_queue(client, study, moderator, alice, bob, group_a):
    turns = list(make_conversation(study, "long", n_turns=52, group=group_a).turns.all())
    for turn in turns:
        dispute(turn, alice, bob)
    client.force_login(moderator)
    first = client.get(study_url("moderate_queue")).content.decode()
    second = client.get(study_url("moderate_queue"), {"page": 2}).content.decode()
    assert first.count("<tr data-turn-id=") == 50
    assert second.count("<tr data-turn-id=") == 2
    assert "52 cards" in first


def queries(client, path, **params) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, params)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_it_keeps_the_moderator_queue_queries_constant(
    client, study, lead, alice, bob, charlie, dora, group_a, group_b
):
    small_a = make_conversation(study, "small-a", n_turns=2, group=group_a).turns.all()
    escalate(small_a[0], alice, bob)
    dispute(small_a[1], alice, bob)
    client.force_login(lead)
    small = [
        queries(client, study_url("moderate_queue")),
        queries(client, study_url("moderate_queue"), type="must_do_omission"),
    ]

    for conversation, (a, b) in (("big-a", (alice, bob)), ("big-b", (charlie, dora))):
        group = group_a if a == alice else group_b
        turns = make_conversation(study, conversation, n_turns=12, group=group).turns.all()
        for i, turn in enumerate(turns):
            if i % 2:
                escalate(turn, a, b, "code_rollback", "signature_mismatch")
            else:
                dispute(turn, a, b, "must_do_omission", "repetitive_response")
                label(turn, a, "repetitive_response", round=2)
    large = [
        queries(client, study_url("moderate_queue")),
        queries(client, study_url("moderate_queue"), type="must_do_omission"),
    ]

    assert large == small
    html = client.get(study_url("moderate_queue")).content.decode()
    assert html.count("<tr data-turn-id=") == 26


def test_it_keeps_the_discuss_queue_queries_constant(client, study, alice, bob, group_a):
    turns = list(make_conversation(study, "many", n_turns=20, group=group_a).turns.all())
    dispute(turns[0], alice, bob)
    dispute(turns[1], alice, bob)
    label(turns[1], alice, "code_rollback", round=2)
    client.force_login(alice)
    small = queries(client, study_url("discuss_queue"))
    for turn in turns[2:]:
        dispute(turn, alice, bob)
        label(turn, alice, "code_rollback", round=2)
    assert queries(client, study_url("discuss_queue")) == small
