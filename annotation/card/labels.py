"""The labels form's own providers (annotation/card): what it shows ticked, and whether the
user put the card off (skip, flag)."""

from __future__ import annotations

from ..models import CardSkip, Proposal
from . import Card


def ticks(card: Card) -> dict:
    """What the labels form shows ticked: the input sent back, or the stored labels plus,
    on a card open to them, the types suggested to their proposer (pre-ticked, not stored)."""
    suggested: list[str] = []
    form, mine = card.form, card.mine
    if form is not None:
        checked = set(form.data.getlist("types"))
        no_smell = bool(form.data.get("no_smell"))
    else:
        checked = {t.code for t in mine.types.all()} if mine else set()
        if not card.locked:
            by_code = {t.code: t for t in card.types}
            stored = checked
            checked = Proposal.objects.pretick(card.user, card.turn, stored, by_code)
            suggested = [by_code[c].name for c in sorted(checked - stored)]
        no_smell = bool(mine) and not checked
    return {"checked": checked, "suggested": suggested, "no_smell": no_smell}


def put_off(card: Card) -> dict:
    """The user's skip or flag of the card, if any (the skip box says so)."""
    return {"put_off": CardSkip.objects.filter(turn=card.turn, annotator=card.user).first()}
