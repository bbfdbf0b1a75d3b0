"""Roles and seats changed on the study's pages, under the round rules.

A round-1 label is its annotator's own and counts in the group whose conversation it is on
(the group's annotators are whose labels its rounds and agreement read). So an annotator
who has labelled (or, in an open sort, tagged) a card of a group stays in that group: moving
or removing them would drop their labels from its rounds, or count them in another group's.
Before their first label they may move freely. Nothing here creates, changes or deletes a
label; a refusal raises SeatRefused naming who, where and why.

A study's moderator is whoever holds a group's moderator seat: Group.seat makes them a
member with the role `moderator`, and losing their last seat makes them an annotator again,
so the moderator's pages (the report above all) close to them at once."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from ..models import (
    Annotation,
    Group,
    Membership,
    Role,
    Seat,
    SeatRefused,
    Study,
    TagSet,
    Turn,
)


def cards_labelled_in(group: Group, user) -> int:
    """How many cards of `group`'s conversations `user` has labelled (any round, any
    revision, any source) or tagged in its open sort."""
    turns = Turn.objects.filter(conversation__assignments__group=group)
    labelled = set(
        Annotation.objects.filter(annotator=user, turn__in=turns).values_list("turn_id", flat=True)
    )
    tagged = TagSet.objects.filter(group=group, annotator=user).values_list("turn_id", flat=True)
    return len(labelled | set(tagged))


def _cards(n: int) -> str:
    return f"{n} card{'s' if n != 1 else ''}"


def unseat_annotator(group: Group, user) -> None:
    """Take `user` out of `group`'s annotators, unless they have labelled one of its cards."""
    n = cards_labelled_in(group, user)
    if n:
        raise SeatRefused(
            f"{user.username!r} has labelled {_cards(n)} of group {group.name!r}: those labels "
            "count in its rounds and agreement, and a label is never deleted or moved to "
            "another group, so they stay in it"
        )
    group.annotators.remove(user)


def seat_annotator(group: Group, user) -> None:
    """Group.seat as an annotator, refused when `user` already has labels on the group's
    cards given elsewhere (seated here, those labels would count in this group's rounds)."""
    if group.annotators.filter(pk=user.pk).exists():
        return
    n = cards_labelled_in(group, user)
    if n:
        raise SeatRefused(
            f"{user.username!r} has labelled {_cards(n)} of group {group.name!r}'s "
            "conversations in another group: seated here, those labels would count in "
            f"{group.name!r}'s rounds"
        )
    group.seat(user, Seat.ANNOTATOR)


def move_annotator(user, source: Group, target: Group) -> None:
    """One step: out of `source`, into `target`; nothing changes when either is refused."""
    if source.pk == target.pk:
        raise SeatRefused(f"{user.username!r} is already in group {target.name!r}")
    with transaction.atomic():
        unseat_annotator(source, user)
        seat_annotator(target, user)


def _demote_if_unseated(study: Study, user) -> None:
    """A moderator who moderates no group of the study any more becomes an annotator."""
    if user is None or Group.objects.filter(study=study, moderator=user).exists():
        return
    Membership.objects.filter(study=study, user=user, role=Role.MODERATOR).update(
        role=Role.ANNOTATOR
    )


def set_moderator(group: Group, user) -> None:
    """`user` (None: nobody, the leads moderate) moderates `group`; the one it replaces
    loses the role with their last seat."""
    before = group.moderator
    with transaction.atomic():
        if user is None:
            group.moderator = None
            group.save(update_fields=["moderator"])
        else:
            group.seat(user, Seat.MODERATOR)
        if before is not None and before != user:
            _demote_if_unseated(group.study, before)


def other_leads(study: Study, user) -> bool:
    return study.memberships.filter(role=Role.LEAD).exclude(user=user).exists()


def set_role(study: Study, user, role: str, group: Group | None = None) -> None:
    """Change a member's role. An annotator gives up their moderator seats (those groups are
    moderated by the leads); a moderator moderates a group (`group`, needed unless they
    already moderate one); the last lead stays a lead."""
    membership = Membership.objects.get(study=study, user=user)
    if membership.role == role and group is None:
        return
    if membership.role == Role.LEAD and role != Role.LEAD and not other_leads(study, user):
        raise SeatRefused(
            f"{user.username!r} is the study's only lead: make someone else a lead first"
        )
    moderated = Group.objects.filter(study=study, moderator=user)
    with transaction.atomic():
        if role == Role.MODERATOR:
            if group is None and not moderated.exists():
                raise SeatRefused(
                    f"choose the group {user.username!r} moderates: a moderator moderates a group"
                )
            if group is not None:
                group.seat(user, Seat.MODERATOR)
        elif role == Role.ANNOTATOR:
            moderated.update(moderator=None)
        Membership.objects.filter(pk=membership.pk).update(role=role)


def remove_member(study: Study, user) -> None:
    """Take `user` out of the study (every seat, then the membership), unless they are its
    only lead or have labelled a card of one of its groups (they stay, and keep their
    labels: remove them from nothing)."""
    membership = Membership.objects.filter(study=study, user=user).first()
    if membership is None:
        raise SeatRefused(f"{user.username!r} is not a member of the study")
    if membership.role == Role.LEAD and not other_leads(study, user):
        raise SeatRefused(
            f"{user.username!r} is the study's only lead: make someone else a lead first"
        )
    seated = study.groups.filter(Q(annotators=user) | Q(judges=user)).distinct()
    labelled = [g.name for g in seated if cards_labelled_in(g, user)]
    if labelled:
        raise SeatRefused(
            f"{user.username!r} has labelled cards of group {', '.join(map(repr, labelled))}: "
            "their labels count in its rounds and agreement, so they stay a member"
        )
    with transaction.atomic():
        for g in seated:
            g.annotators.remove(user)
            g.judges.remove(user)
        study.groups.filter(moderator=user).update(moderator=None)
        membership.delete()
