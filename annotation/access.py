"""Access helpers shared by pages, partials and the API. Every view starts with one of
these; a template never decides who may see what."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import Annotation, CardState, CardStatus, Group, Kind, Role, Study, Turn


def get_study_for_user(user, slug: str) -> tuple[Study, str]:
    """The study and the user's role in it; 404 for non-members, so a study's existence
    does not leak."""
    study = get_object_or_404(Study.objects.select_related("taxonomy_version"), slug=slug)
    role = study.role_of(user)
    if role is None:
        raise Http404("No such study")
    return study, role


def get_study_for_lead(user, slug: str) -> Study:
    study, role = get_study_for_user(user, slug)
    if role != Role.LEAD:
        raise Http404("No such study")
    return study


def get_card_for_annotator(user, study: Study, turn_id: int) -> tuple[Turn, Group]:
    """A turn the user annotates: its conversation is assigned to one of the user's groups
    (one at most of the groups sharing it: Group.check_seat)."""
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"),
        pk=turn_id,
        conversation__study=study,
    )
    group = (
        Group.objects.filter(assignments__conversation_id=turn.conversation_id, annotators=user)
        .order_by("name")
        .first()
    )
    if group is None:
        raise Http404("No such card")
    return turn, group


# --- round-1 blindness: the one place that decides it -------------------------------------
#
# Whoever annotates a card (is one of the annotators of the card's group) never sees another
# annotator's labels or notes on it while the card is still in round 1 (status open, or no
# state row yet), whatever other role they hold: lead, moderator, superuser. A lead or
# moderator who does not annotate the card may see them. Pages, partials, error bodies, the
# API and exports all ask these functions, never a role.


def annotates(user, group: Group | None) -> bool:
    """Whether `user` is one of the annotators of `group` (and so labels its cards blind)."""
    if group is None or not getattr(user, "is_authenticated", False):
        return False
    return group.annotators.filter(pk=user.pk).exists()


def may_see_round1(user, group: Group | None, state: CardState | None) -> bool:
    """The per-card predicate: may `user` see the other annotators' round-1 labels and notes
    on the card whose group is `group` and whose state row is `state` (None: nobody has
    labelled it yet, so it is open)? Access to the study and the group is checked
    elsewhere; this only adds blindness."""
    revealed = state is not None and state.status != CardStatus.OPEN
    return revealed or not annotates(user, group)


def round1_hidden_from(user, study: Study | None) -> QuerySet:
    """The ids of the cards (turns) of `study` (every study when None) on which `user` may
    not see anyone else's labels or notes: the open cards of the groups `user` annotates.
    A `values("pk")` queryset, for `turn_id__in=` filters (one subquery, no rows loaded).
    Exports, API lists and pages drop other annotators' rows on these cards."""
    if not getattr(user, "is_authenticated", False):
        return Turn.objects.none().values("pk")
    turns = Turn.objects.filter(conversation__assignments__group__annotators=user)
    if study is not None:
        turns = turns.filter(conversation__study=study)
    # a shared card has a state per group: what counts is the state in the group `user`
    # annotates (one only of those sharing a conversation: Group.check_seat)
    revealed = (
        CardState.objects.filter(group__annotators=user)
        .exclude(status=CardStatus.OPEN)
        .values("turn_id")
    )
    return turns.exclude(pk__in=revealed).values("pk")


def round1_hidden_q(user, study: Study | None, *, turn: str = "turn", who: str = "annotator") -> Q:
    """A Q over rows that carry a card (`turn`) and a person (`who`), e.g. annotations:
    true for the rows `user` may not see (someone else's, on a card hidden from them)."""
    if not getattr(user, "is_authenticated", False):
        return Q(pk__in=[])
    return Q(**{f"{turn}__in": round1_hidden_from(user, study)}) & ~Q(**{who: user})


def agreement_locked_reason(user, study: Study) -> str:
    """Why `user` may not see the study's agreement results yet ("" when they may). The
    results count every round-1 label; someone who annotates a card still in round 1 on which
    others have labelled could read those labels off a pair's kappa or confusion, so the
    results stay closed to them until round 1 is over on such cards. One query."""
    others = (
        Annotation.objects.filter(turn_id__in=round1_hidden_from(user, study), round=1)
        .exclude(annotator=user)
        .values("turn_id")
        .distinct()
    )
    n = others.count()
    if not n:
        return ""
    return (
        f"You annotate {n} card{'s' if n != 1 else ''} still in round 1 on which others have "
        "labelled. The agreement results count those round-1 labels, so they open for you "
        "once round 1 is over on those cards."
    )


def may_decide(user, role: str | None, group: Group) -> bool:
    """Who may decide a card's consensus: the group's moderator or a lead of the study,
    and never one of the card's own annotators (their round-1 labels must stay their own
    judgment, and a decider who voted would settle their own dispute)."""
    moderates = role == Role.LEAD or (
        group.moderator_id is not None and group.moderator_id == user.pk
    )
    return moderates and not annotates(user, group)


def is_expert(study: Study, user, role: str | None) -> bool:
    """Who decides proposals: the study's leads and its expert members (any role)."""
    if role is None:
        return False
    return role == Role.LEAD or study.memberships.filter(user=user, kind=Kind.EXPERT).exists()


def get_study_for_expert(user, slug: str) -> Study:
    study, role = get_study_for_user(user, slug)
    if not is_expert(study, user, role):
        raise Http404("No such study")
    return study
