"""The split check: a study whose cards check the splitting of another study.

Two units (`create_split_check --unit`):
- `entries` (the default, the study's procedure; entries.py): each card is an entry, a
  conversation as the splitting left it (a part of a split one, or one left whole), shown
  beside its original; preset `split-check-entries`, the question "is the entry one
  self-contained topic?";
- `boundaries` (boundaries.py): each card is a split point, the boundary between two
  consecutive parts, shown on the original beside the two parts; preset `split-check`.

`create_split_check` draws `n` units (or `auto`: Cochran's size over the units) with a seed
and makes the new study in one transaction: nothing is written when it fails. The card and
discussion pages take what a card shows from `turn_context`. The measures (accuracy, entry
accuracy with its interval, kappa on correct/incorrect) are annotation/agreement/splitcheck.py's."""

from __future__ import annotations

from django.db import transaction

from ...models import Conversation, Study, Turn
from ...splitcheck_codes import CORRECT, ENTRY_AXIS, RIGHT_SPLIT
from . import boundaries, entries
from .common import METADATA_KEY, SOURCE_FORMAT, SplitCheckError, check_of
from .entries import open_proposals

ENTRIES, BOUNDARIES = "entries", "boundaries"
UNITS = (ENTRIES, BOUNDARIES)
PRESET = boundaries.PRESET

__all__ = [
    "BOUNDARIES",
    "CORRECT",
    "ENTRIES",
    "ENTRY_AXIS",
    "METADATA_KEY",
    "PRESET",
    "RIGHT_SPLIT",
    "SOURCE_FORMAT",
    "UNITS",
    "SplitCheckError",
    "card_context",
    "card_provider",
    "check_of",
    "count_units",
    "create_split_check",
    "open_proposals",
    "turn_context",
]


def count_units(study: Study, unit: str = ENTRIES) -> int:
    """The population a split check of `unit` draws from."""
    if unit == BOUNDARIES:
        return boundaries.count_split_points(study)
    return entries.population_counts(study).n_entries


@transaction.atomic
def create_split_check(
    source: Study,
    slug: str,
    *,
    n: int | None,
    seed: int,
    unit: str = ENTRIES,
    confidence: float | None = None,
    margin: float | None = None,
    name: str = "",
    created_by=None,
) -> Study:
    """A new split-check study of `source`: `n` of its units of `unit` (None: Cochran's size
    for `confidence` and `margin`, default 95% and ±5%, over the units) drawn with `seed`;
    the source study's leads lead it. SplitCheckError, with nothing written, when it cannot."""
    if unit not in UNITS:
        raise SplitCheckError(f"--unit must be one of {', '.join(UNITS)} (got {unit!r})")
    maker = entries.create if unit == ENTRIES else boundaries.create
    return maker(
        source, slug, n=n, seed=seed, confidence=confidence, margin=margin, name=name,
        created_by=created_by,
    )  # fmt: skip


def turn_context(turn: Turn) -> dict:
    """What the card's turn panel needs (card and discussion page): its conversation and,
    on a split-check card, what `card_context` gives."""
    return {"conversation": turn.conversation, **card_context(turn.conversation)}


def card_context(conversation: Conversation) -> dict:
    """What a split-check card shows ({"split_check": {...}}), or {} for a card of any other
    study."""
    check = check_of(conversation)
    if check is None:
        return {}
    if check.get("unit") == entries.UNIT:
        return entries.card_context(check)
    return boundaries.card_context(check)


def card_provider(card) -> dict:
    """The card page's provider (annotation/card): the turn panel's context."""
    return turn_context(card.turn)
