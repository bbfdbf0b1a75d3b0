"""Finding one's way between pages: the home page's progress per study, the filters of "My
cards", the count of cards waiting to be discussed, and the moderator's next escalated card
or episode. Every count of cards here is one grouped query, whatever the number of studies,
groups or cards; the escalated episodes are replayed from their judgements (they keep no
state row: episodes/rounds.py), a few queries, none for a study without episode groups."""

from __future__ import annotations

from django.db.models import Q, QuerySet, Sum

from ...episodes.moderation import Waiting, moderated_episodes
from ...forms import MyCardsFilter
from ...models import (
    CardState,
    CardStatus,
    Group,
    Membership,
    Role,
    Study,
    Unit,
    queue,
)
from ...models.figures import STATUSES, GroupFigures
from ...models.queue import KeptCards, QueueProgress

# --- the home page -----------------------------------------------------------------------


def studies_progress(user, studies: list[Study]) -> list[dict]:
    """One row per study: {study, done, total} (my round-1 labels or open-sort tag sets, my
    cards: as on the study's page) and, where I lead, `states`: the study's cards per state,
    summed over its groups (a card shared by two groups counts in each). Read from the kept
    rows (models/queue.QueueProgress, models/figures.GroupFigures): three queries, whatever
    the number of studies or of their cards."""
    ids = [s.pk for s in studies]
    if not ids:
        return []
    if user.is_superuser:
        leads = set(ids)
    else:
        memberships = Membership.objects.filter(user=user, study_id__in=ids, role=Role.LEAD)
        leads = set(memberships.values_list("study_id", flat=True))
    mine = QueueProgress.objects.filter(annotator_id=user.pk, study_id__in=ids)
    progress = {
        pk: (done, cards) for pk, done, cards in mine.values_list("study_id", "done", "cards")
    }
    states = _states_by_study(sorted(leads))
    rows = []
    for study in studies:
        done, total = progress.get(study.pk, (0, 0))
        row = {"study": study, "done": done, "total": total}
        if study.pk in leads:
            row["states"] = states[study.pk]
        rows.append(row)
    return rows


def _states_by_study(ids: list[int]) -> dict[int, dict[str, int]]:
    """{study id: {status: cards}} from the groups' kept figures; cards nobody labelled yet
    have no state row: open."""
    if not ids:
        return {}
    rows = (
        GroupFigures.objects.filter(group__study_id__in=ids)
        .order_by()
        .values_list("group__study_id")
        .annotate(cards=Sum("cards"), **{status: Sum(status) for status in STATUSES})
    )
    out = {pk: dict.fromkeys(CardStatus.values, 0) for pk in ids}
    for study_id, cards, *by_status in rows:
        counts = out[study_id]
        counts.update(zip(STATUSES, by_status, strict=True))
        decided = sum(n for status, n in counts.items() if status != CardStatus.OPEN)
        counts[CardStatus.OPEN] = (cards or 0) - decided
    return out


# --- my cards and my queue -------------------------------------------------------------------


def filter_my_cards(cards: QuerySet, form: MyCardsFilter) -> QuerySet:
    """`cards` (annotated with `done` and `status`) as the valid `form` asks."""
    state, text = form.cleaned_data["state"], form.cleaned_data["q"]
    if state == "todo":
        cards = cards.filter(done=False)
    elif state == "labelled":
        cards = cards.filter(done=True)
    elif state:
        cards = cards.filter(status=state)
    if text:
        cards = cards.filter(
            Q(user_text__icontains=text)
            | Q(reply_text__icontains=text)
            | Q(conversation__external_id__icontains=text)
            | Q(conversation__key__icontains=text)
        )
    return cards


def my_cards(study: Study, user, form: MyCardsFilter, cards: QuerySet):
    """What "My cards" lists for the valid `form`: the kept rows (KeptCards) for all my cards,
    those to do or those labelled; the card's state or a text filter goes through
    `filter_my_cards` on `cards` (annotated with `done` and `status`)."""
    state, text = form.cleaned_data["state"], form.cleaned_data["q"]
    if not text and state in ("", "todo", "labelled"):
        return KeptCards(study, user, state)
    return filter_my_cards(cards, form)


def to_discuss_count(user, study: Study) -> int:
    """My disputed cards whose round under way waits for my labels: a count on the kept
    queue's index by state (models/queue.disputed), never a walk of the study's states."""
    return queue.disputed(study, user, answered=False).count()


class DisputedCards:
    """My disputed cards (my turn, or `answered`: waiting for the others) as a sequence a
    Paginator pages: the kept queue's rows by state for the count and the page's cards, then
    their states (round, since when) with their turns: three queries a page."""

    def __init__(self, study: Study, user, answered: bool):
        self.rows = queue.disputed(study, user, answered)

    def count(self) -> int:
        return self.rows.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[CardState]:
        keys = list(self.rows.values_list("turn_id", "group_id")[window])
        if not keys:
            return []
        states = (
            CardState.objects.filter(
                turn_id__in=[t for t, _ in keys], group_id__in={g for _, g in keys}
            )
            .select_related("turn__conversation", "group")
            .defer("turn__reply_text", "turn__reply_parts", "turn__metadata")
        )
        by_key = {(s.turn_id, s.group_id): s for s in states}
        return [by_key[k] for k in keys if k in by_key]


# --- the moderator's next escalated card or episode ---------------------------------------------
#
# Next: the escalated cards first, the longest waiting first (the moderation queue's order),
# then the escalated episodes of the episode groups, in session order (an episode keeps no
# state row, so no time since it was escalated: episodes/moderation.moderated_episodes).


def escalated_for(user, study: Study, role: str | None) -> QuerySet:
    """The escalated cards `user` may decide (access.may_decide: the groups they moderate, all
    for a lead, never one where they annotate), the longest waiting first, as the moderation
    queue orders them."""
    groups = Group.objects.filter(study=study)
    if role != Role.LEAD:
        groups = groups.filter(moderator=user)
    groups = groups.exclude(annotators=user)
    return CardState.objects.filter(group__in=groups, status=CardStatus.ESCALATED).order_by(
        "updated_at", "pk"
    )


def escalated_episodes_for(user, study: Study, role: str | None, groups=None) -> list[Waiting]:
    """The escalated episodes `user` may decide: of the episode groups they moderate (all
    for a lead; `groups`, those groups when the caller has them already:
    access.get_moderated_groups), never one of a group where they annotate, in session
    order."""
    if groups is None:
        groups = Group.objects.filter(study=study, unit=Unit.EPISODE)
        if role != Role.LEAD:
            groups = groups.filter(moderator=user)
    groups = [g for g in groups if g.unit == Unit.EPISODE]
    if not groups:
        return []
    waiting = moderated_episodes(groups, study, user)
    return [w for w in waiting if w.state.status == CardStatus.ESCALATED]


def escalated_left(user, study: Study, role: str | None, cards: int, groups=None) -> dict:
    """The next link's figures (discussion/_next_escalated.html): `escalated_left`, the
    escalated cards (`cards`, counted by the caller) and episodes left for `user` to decide,
    and `escalated_episodes_left`, the episodes among them (`groups`: as
    escalated_episodes_for)."""
    episodes = len(escalated_episodes_for(user, study, role, groups))
    return {"escalated_left": cards + episodes, "escalated_episodes_left": episodes}


def escalated_left_after(user, study: Study, card) -> dict:
    """On a discussion page: how many escalated cards and episodes are left for its decider
    once the card is decided (`escalated_left` None: not decided, or not theirs to decide:
    no link)."""
    if not card.may_decide or card.status != CardStatus.AGREED:
        return {"escalated_left": None}
    return escalated_left(user, study, card.role, escalated_for(user, study, card.role).count())
