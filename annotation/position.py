"""Where a card stands for its annotator: my progress (cards I have labelled, or tagged in an
open sort, of all my cards), the card's place among my cards and its neighbours (Back and
Next). Every card page asks it, and every label submit for the next card.

Read from the rows models/queue.py keeps (issue 25): the counts are one row, the card's place
and its neighbours seeks on (annotator, study, ordinal), so a card takes the same time among
40 or 40,000 cards. "My cards" are the turns of the conversations assigned to the groups I
annotate in, in the study, in (conversation, index) order (TurnQuerySet.for_annotator;
tests/perf/test_position.py holds the two together)."""

from __future__ import annotations

from dataclasses import dataclass

from .models import Turn
from .models.queue import place, progress


@dataclass(frozen=True)
class Position:
    total: int  # my cards
    before: int  # my cards in the conversations before the card's
    done: int  # my cards with my round-1 label (or, in an open sort, my tag set)
    prev_id: int | None = None
    next_id: int | None = None


def position(study, user, turn: Turn | None = None) -> Position:
    """My progress in `study`; with `turn` (one of my cards), also its place (`before`: my
    cards in the conversations before its own) and my cards before and after it. One
    query."""
    if turn is None:
        done, total = progress(study, user)
        return Position(total, 0, done)
    total, done, ordinal, prev_id, next_id = place(study, user, turn)
    before = ordinal - turn.index if ordinal else 0
    return Position(total, before, done, prev_id, next_id)


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
