"""Creating a group: the lead's Groups page and `manage.py create_group`. A group is created
with its phase and moderator in one transaction; its phase goes through the open sort's
rule (opensort.tagging.set_group_phase) and its moderator through the seats' rule
(accounts.seats.set_moderator), as when they are changed later on the page."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from ..accounts.seats import set_moderator
from ..models import Group, Kind, Study, Unit
from ..opensort.tagging import PhaseRefused, set_group_phase


class GroupRefused(ValueError):
    """A group that cannot be created as asked; the message says what is wrong."""


def _check_name(study: Study, name: str) -> None:
    limit = Group._meta.get_field("name").max_length
    if not name:
        raise GroupRefused("a group needs a name")
    if len(name) > limit or "\x00" in name:
        raise GroupRefused(f"a group's name has at most {limit} characters and no NUL")
    if study.groups.filter(name=name).exists():
        raise GroupRefused(f"study {study.slug} already has a group named {name!r}")


def create_group(
    study: Study, name: str, kind: str, *, phase: str = "", moderator=None, unit: str = Unit.TURN
) -> Group:
    """A new group of `kind` in `study`; `phase` "" follows the study's; `moderator` (a user,
    or None: the leads moderate) is seated as its moderator; `unit` is what its annotators
    label (turns or episodes). All of it, or nothing: GroupRefused (the name, the kind, the
    unit, the phase) or SeatRefused (the moderator's seat)."""
    name = name.strip()
    _check_name(study, name)
    if kind not in Kind.values:
        raise GroupRefused(f"unknown kind {kind!r}: choose one of {', '.join(Kind.values)}")
    if unit not in Unit.values:
        raise GroupRefused(f"unknown unit {unit!r}: choose one of {', '.join(Unit.values)}")
    with transaction.atomic():
        try:
            with transaction.atomic():
                group = Group.objects.create(study=study, name=name, kind=kind, unit=unit)
        except IntegrityError:
            # created by someone else since _check_name looked
            raise GroupRefused(f"study {study.slug} already has a group named {name!r}") from None
        if phase:
            try:
                set_group_phase(group, phase)
            except PhaseRefused as e:
                raise GroupRefused(str(e)) from None
            group.refresh_from_db()
        if moderator is not None:
            set_moderator(group, moderator)
    return group
