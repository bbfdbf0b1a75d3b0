"""Where a card stands for its annotator, in one SQL statement: my progress (cards I have
labelled, or tagged in an open sort, of all my cards), the card's place among my cards and
its neighbours (Back and Next). Every card page asks it, and every label submit for the next
card. As five ORM queries it cost about a third of the card's time on PostgreSQL, most of it
in building and planning the queries rather than running them
(benchmarks/load_profile.py). SQLite and PostgreSQL alike.

"My cards" are the turns of the conversations assigned to the groups I annotate in, in the
study (TurnQuerySet.for_annotator says the same in the ORM; tests/perf/test_position.py
holds the two together). I sit in one group only of those sharing a conversation
(Group.check_seat), so a join through the assignments gives one row per card."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from .models import Annotation, Assignment, Conversation, Group, TagSet, Turn

# seat: the groups I annotate in, in the study; mine: their conversations in the study. The
# CROSS JOINs keep SQLite's join order (from my groups to their assignments, not from the
# study's every conversation); PostgreSQL plans them as inner joins.
_WITH = """
WITH seat AS (
    SELECT ga.group_id FROM {group_annotators} ga JOIN {group} g ON g.id = ga.group_id
    WHERE ga.user_id = %(user)s AND g.study_id = %(study)s
), mine AS (
    SELECT c.id, c.n_turns FROM seat s
    CROSS JOIN {assignment} a CROSS JOIN {conversation} c
    WHERE a.group_id = s.group_id AND c.id = a.conversation_id AND c.study_id = %(study)s
)"""

# my cards, joined from a turn `t` (one row per card)
_ON_MINE = """JOIN {assignment} am ON am.conversation_id = t.conversation_id
    AND am.group_id IN (SELECT group_id FROM seat)"""

_PROGRESS = """
    (SELECT COALESCE(SUM(n_turns), 0) FROM mine) AS total,
    (SELECT COALESCE(SUM(n_turns), 0) FROM mine WHERE id < %(conversation)s) AS before,
    (SELECT COUNT(*) FROM {annotation} an JOIN {turn} t ON t.id = an.turn_id {on_mine}
        WHERE an.annotator_id = %(user)s AND an.round = 1 AND an.is_current = %(true)s)
    + (SELECT COUNT(*) FROM {tag_set} ts JOIN {turn} t ON t.id = ts.turn_id {on_mine}
        WHERE ts.annotator_id = %(user)s AND NOT EXISTS (
            SELECT 1 FROM {annotation} x WHERE x.turn_id = ts.turn_id
            AND x.annotator_id = %(user)s AND x.round = 1 AND x.is_current = %(true)s)
    ) AS done"""

# Back and Next: the card's neighbour in its own conversation (mine), else the last (first)
# card of my nearest conversation before (after) it that has cards, walked along the
# assignments' (group, conversation) index: a few rows read, however many cards I have
_NEIGHBOUR = """COALESCE(
        (SELECT t.id FROM {turn} t
            WHERE t.conversation_id = %(conversation)s AND t."index" {cmp} %(index)s
            ORDER BY t."index" {order} LIMIT 1),
        (SELECT t.id FROM {turn} t WHERE t.conversation_id = (
            SELECT a.conversation_id FROM seat s
            CROSS JOIN {assignment} a CROSS JOIN {conversation} c
            WHERE a.group_id = s.group_id AND a.conversation_id {cmp} %(conversation)s
                AND c.id = a.conversation_id AND c.study_id = %(study)s
                AND EXISTS (SELECT 1 FROM {turn} u WHERE u.conversation_id = a.conversation_id)
            ORDER BY a.conversation_id {order} LIMIT 1)
        ORDER BY t."index" {order} LIMIT 1))"""


@dataclass(frozen=True)
class Position:
    total: int  # my cards
    before: int  # my cards in the conversations before the card's
    done: int  # my cards with my round-1 label (or, in an open sort, my tag set)
    prev_id: int | None = None
    next_id: int | None = None


def _sql(neighbours: bool) -> str:
    tables = {
        "group_annotators": Group.annotators.through._meta.db_table,
        "group": Group._meta.db_table,
        "conversation": Conversation._meta.db_table,
        "assignment": Assignment._meta.db_table,
        "annotation": Annotation._meta.db_table,
        "tag_set": TagSet._meta.db_table,
        "turn": Turn._meta.db_table,
    }
    quoted = {k: connection.ops.quote_name(v) for k, v in tables.items()}
    on_mine = _ON_MINE.format(**quoted)
    columns = _PROGRESS.format(on_mine=on_mine, **quoted)
    if neighbours:
        prev_id = _NEIGHBOUR.format(cmp="<", order="DESC", **quoted)
        next_id = _NEIGHBOUR.format(cmp=">", order="ASC", **quoted)
        columns += f",\n    {prev_id} AS prev_id,\n    {next_id} AS next_id"
    return _WITH.format(**quoted) + "\nSELECT" + columns


def position(study, user, turn: Turn | None = None) -> Position:
    """My progress in `study`; with `turn` (one of my cards), also its place (`before`: my
    cards in the conversations before its own) and my cards before and after it."""
    params = {"user": user.pk, "study": study.pk, "true": True}
    params["conversation"] = turn.conversation_id if turn else 0
    params["index"] = turn.index if turn else 0
    with connection.cursor() as cursor:
        cursor.execute(_sql(neighbours=turn is not None), params)
        row = cursor.fetchone()
    return Position(*row)  # the columns in the order of the fields


def card_provider(card) -> dict:
    """The card page's provider (annotation/card): where the card stands among the user's
    cards (progress, its place, its neighbours)."""
    at = position(card.study, card.user, card.turn)
    return {
        "done": at.done,
        "total": at.total,
        "position": at.before + card.turn.index,
        "prev_id": at.prev_id,
        "next_id": at.next_id,
    }
