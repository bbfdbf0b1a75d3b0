"""The discussion page's table of labels by round: each annotator's current labels per round,
side by side, whether they changed since the round before, their own revisions, and a label a
taxonomy move carried shown with the label as its annotator gave it."""

from __future__ import annotations

from ...access import DiscussionCard
from ...models import Annotation


def rounds_table(
    annotations: list[Annotation], annotators: list, card: DiscussionCard
) -> list[dict]:
    """[{round, columns: [{annotator, current, revisions, changed, original}]}]: one column
    per annotator of the group (and anyone who labelled the card and has left it since).
    A label a taxonomy move carried is not a revision: `revisions` counts the annotator's own
    versions, and `original` is the label as they gave it, under its first version."""
    people = {u.pk: u for u in annotators}
    by_pk = {a.pk: a for a in annotations}
    for a in annotations:
        people.setdefault(a.annotator_id, a.annotator)
    numbers = sorted({a.round for a in annotations} | {card.round})
    rounds = []
    previous: dict[int, Annotation] = {}
    for number in numbers:
        columns = []
        current_of: dict[int, Annotation] = {}
        for user in people.values():
            rows = [a for a in annotations if a.round == number and a.annotator_id == user.pk]
            current = next((a for a in rows if a.is_current), None)
            before = previous.get(user.pk)
            changed = None
            if current is not None and before is not None:
                changed = current.codes != before.codes
            original = current
            while original is not None and original.carried_from_id in by_pk:
                original = by_pk[original.carried_from_id]
            columns.append(
                {
                    "annotator": user,
                    "current": current,
                    "revisions": sum(1 for a in rows if a.retired_by_id is None),
                    "changed": changed,
                    "original": None if original is current else original,
                }
            )
            if current is not None:
                current_of[user.pk] = current
        rounds.append({"number": number, "columns": columns})
        previous = current_of
    return rounds
