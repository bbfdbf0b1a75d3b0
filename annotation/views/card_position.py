"""Where a card stands among the user's cards, in one query: my progress (round-1 labels, and
open-sort tag sets not yet labels), my cards and those before the card, and its neighbours in
my queue. Each figure is a scalar subquery of one SELECT, so the card costs one round trip
for all of them (five before), and the same with 500 cards or 50,000: counted over my
conversations (their turn counts) and my labels, never over every card."""

from __future__ import annotations

from django.db.models import F, IntegerField, QuerySet, Subquery

from ..models import Annotation, Conversation, Study, Turn
from ..opensort import tagging


class Scalar(Subquery):
    """`(SELECT <aggregate> FROM (<queryset>) s)`: one number from a queryset, inside
    another query (0 for no row: the aggregate is wrapped in COALESCE)."""

    output_field = IntegerField()

    def __init__(self, queryset: QuerySet, aggregate: str) -> None:
        self.template = f"(SELECT COALESCE({aggregate}, 0) FROM (%(subquery)s) s)"
        super().__init__(queryset.order_by())


def progress(study: Study, user, before: Turn | None = None, neighbours: bool = False) -> dict:
    """{done, total, before} (with `before`: the cards before that one), and with
    `neighbours` also {prev_id, next_id}: the cards around `before` in my queue."""
    mine = Conversation.objects.filter(study=study, assignments__group__annotators=user)
    mine_ids = mine.values("id")
    earlier = mine.filter(id__lt=before.conversation_id if before else 0)
    # my round-1 labels on my conversations (not those I gave as a judge of another group),
    # matched by conversation id: far fewer than the cards
    labels = Annotation.objects.filter(
        annotator=user, round=1, is_current=True, turn__conversation_id__in=mine_ids
    )
    # and the cards I tagged in an open sort (not yet labels: the freeze makes them so)
    tagged = tagging.tagged_without_labels(user).filter(turn__conversation_id__in=mine_ids)
    figures = {
        "total": Scalar(mine.values(n=F("n_turns")), "SUM(n)"),
        "before": Scalar(earlier.values(n=F("n_turns")), "SUM(n)"),
        "labels": Scalar(labels.values("pk"), "COUNT(*)"),
        "tagged": Scalar(tagged.values("pk"), "COUNT(*)"),
    }
    if neighbours and before is not None:
        cards = Turn.objects.for_annotator(study, user)
        previous = cards.before_in_queue(before).order_by("-conversation_id", "-index")
        figures["prev_id"] = Subquery(previous.values("pk")[:1])
        figures["next_id"] = Subquery(cards.after(before).values("pk")[:1])
    row = Study.objects.filter(pk=study.pk).values(**figures).get()
    row["done"] = row.pop("labels") + row.pop("tagged")
    return row
