"""The open sort on the annotator's card: the free-tag panel that stands in for the types
(the card page's provider, annotation/card)."""

from __future__ import annotations

from ..models import Group, Turn
from . import tagging
from .tagging import TagInput


def panel_context(user, turn: Turn, group: Group, posted=None) -> dict:
    """What the card's tag panel shows: the user's own stored tag set (never anyone
    else's), or the input `posted` back to be corrected."""
    stored = tagging.tag_set_of(turn, group, user)
    if posted is not None:
        chosen, note, no_smell = posted.tags, posted.note, posted.no_smell
    elif stored is not None:
        chosen = [TagInput(t.name, t.description) for t in stored.tags.all()]
        note, no_smell = stored.note, not chosen
    else:
        chosen, note, no_smell = [], "", False
    visit = tagging.lock_of(group.study, user)
    return {
        "open_sort": True,
        "tags_locked": tagging.TagsLocked(visit) if visit is not None else None,
        "tag_set": stored,
        "chosen_tags": chosen,
        "tag_note": note,
        "tag_no_smell": no_smell,
        "tags_posted": posted is not None,
    }


def card_provider(card) -> dict:
    """The tag panel of a card whose group open-sorts (with the tags posted back to be
    corrected); nothing on any other card."""
    if card.group is None or not card.group.open_sorting:
        return {}
    return panel_context(card.user, card.turn, card.group, card.tags_posted)
