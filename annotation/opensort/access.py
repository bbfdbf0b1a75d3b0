"""Who may open the consolidation board and its analytics: the one rule the board page, its
partials, its analytics and their CSV downloads share.

The board shows every expert's free tags on every card. Round 1 stays blind in an open sort
too: whoever still has cards of their own to tag in an open-sorting group (an annotator of
the group without a TagSet on one of its cards) must not see anyone else's tags before giving
theirs, whatever other role they hold, lead included. Apart from that, the board is for the
study's leads and its experts (annotation/access.is_expert). Seeing the board locks one's
own tag sets (opensort/tagging) and round-1 labels on the open sort's cards (labels_locked)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q

from ..access import get_study_for_user, is_expert, round1_hidden_from
from ..models import BoardVisit, Group, Phase, Study, TagSet, Turn

LEADS_AND_EXPERTS_ONLY = (
    "Leads and experts only: the study's leads and expert members consolidate the open sort."
)


def open_sort_cards_left(study: Study, user) -> int:
    """How many cards `user` still has to tag in the open-sorting groups of `study` they
    annotate: cards of the group's conversations with no TagSet of theirs (one query)."""
    if not getattr(user, "is_authenticated", False):
        return 0
    # a group with no phase of its own follows the study's
    open_sorting = Q(phase=Phase.OPEN_SORT)
    if study.phase == Phase.OPEN_SORT:
        open_sorting |= Q(phase="")
    groups = Group.objects.filter(open_sorting, study=study, annotators=user)
    tagged = TagSet.objects.filter(turn=OuterRef("pk"), annotator=user, group__in=groups)
    return (
        Turn.objects.visible()
        .filter(conversation__study=study, conversation__assignments__group__in=groups)
        .exclude(Exists(tagged))
        .values("pk")
        .distinct()
        .count()
    )


def may_see_board(study: Study, user) -> tuple[bool, str]:
    """Whether `user` may see the board of `study` (its tags, their counts and authors, its
    analytics), and if not, why: the reason a 403 page shows. Leads and experts only, and
    none of them while they have open-sort cards of their own left to tag."""
    role = study.role_of(user)
    if not is_expert(study, user, role):
        return False, LEADS_AND_EXPERTS_ONLY
    left = open_sort_cards_left(study, user)
    if left:
        cards = f"{left} card{'s' if left != 1 else ''}"
        return False, (
            f"You still have {cards} to tag in the open sort. The board shows everyone's tags "
            "on the cards, so it opens for you once you have tagged all of yours: your tags "
            "stay your own judgment."
        )
    reason = _tags_hidden_after_freeze(study, user)
    return not reason, reason


def _tags_hidden_after_freeze(study: Study, user) -> str:
    """After the freeze the board still shows others' open-sort tags on the cards: whoever
    labels such a card in round 1 without having tagged it waits until they have labelled it."""
    mine = TagSet.objects.filter(annotator=user, turn_id=OuterRef("turn_id"))
    n = (
        TagSet.objects.filter(turn_id__in=round1_hidden_from(user, study))
        .exclude(annotator=user)
        .exclude(Exists(mine))  # NOT EXISTS: a join, where NOT IN re-reads `mine` per row
        .values("turn_id")
        .distinct()
        .count()
    )
    if not n:
        return ""
    return (
        f"You label {n} card{'s' if n != 1 else ''} still in round 1 on which others' open-sort "
        "tags are on the board. It opens for you once you have labelled "
        f"{'them' if n != 1 else 'it'}: your labels stay your own judgment."
    )


def get_study_for_board(user, slug: str, record: bool = True) -> Study:
    """The study, for a view of its board: 404 for a non-member (nothing is revealed), a 403
    with may_see_board's reason for a member who may not see it. The visit is recorded
    (BoardVisit, unless `record` is off: the board's confirmation page shows no tag): it
    locks the visitor's own tag sets."""
    study, _role = get_study_for_user(user, slug)
    allowed, reason = may_see_board(study, user)
    if not allowed:
        raise PermissionDenied(reason)
    if record:
        BoardVisit.objects.get_or_create(study=study, user=user)
    return study


def tags_open_to_lock(study: Study, user) -> bool:
    """Whether opening the board would lock tag sets `user` may still change: they annotate
    an open-sorting group of the study and have not seen the board yet."""
    if BoardVisit.objects.filter(study=study, user=user).exists():
        return False
    open_sorting = Q(phase=Phase.OPEN_SORT)
    if study.phase == Phase.OPEN_SORT:
        open_sorting |= Q(phase="")
    return Group.objects.filter(open_sorting, study=study, annotators=user).exists()


# -- round-1 labels on the open sort's cards --------------------------------------------------
#
# After the freeze a card stays in round 1 until every annotator of its group has labelled it.
# Whoever has seen the board has seen everyone's tags on the open sort's cards: their round-1
# labels there lock as their tag sets did (tagging.TagsLocked), rather than the board staying
# closed to them, because they saw it before the freeze (the experts consolidate it once they
# have tagged all their cards, and the cards leave round 1 only at the freeze or after it): a
# board closed from then on would not undo what they saw.

LABELS_LOCKED = "Your round-1 labels on the open sort's cards are locked"


def labels_locked(study: Study, user, turn: Turn) -> str:
    """Why `user` may not give or change a round-1 label on `turn` ("" when they may): they
    opened the consolidation board of `study` (or its analytics), and it shows the tags of
    the open sort on this card (someone's tag set is on it). The page, its htmx partial and
    the API refuse such a submit with this reason, and keep what is stored. One query."""
    on_board = TagSet.objects.filter(turn=turn, group__study=study)
    visit = BoardVisit.objects.filter(Exists(on_board), study=study, user=user).first()
    if visit is None:
        return ""
    return (
        f"{LABELS_LOCKED}, as your tags were: you opened the consolidation board on "
        f"{visit.first_at:%Y-%m-%d %H:%M} UTC, and it shows everyone's tags on this card: what "
        "is stored stays your own judgment, given before you saw them."
    )


def labels_open_to_lock(study: Study, user) -> bool:
    """Whether opening the board would lock round-1 labels `user` may still give or change:
    they have not seen it yet, and a card of theirs still in round 1 carries open-sort tags."""
    if BoardVisit.objects.filter(study=study, user=user).exists():
        return False
    cards = round1_hidden_from(user, study)
    return TagSet.objects.filter(group__study=study, turn_id__in=cards).exists()
