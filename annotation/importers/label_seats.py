"""Who and where a label import's records go (importers/annotations.py, its first pass):
each record's annotator seated in its group (as annotator, or judge with --judge), accounts
and groups created with --create-members, and each conversation assigned to the groups its
records name. Decided once per pair, so every record of a refused pair gets the same error;
and what was created is remembered (`created`), so an import of which no label lands leaves
none of it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..db.inserts import insert_assignments
from ..models import (
    Assignment,
    Conversation,
    Group,
    Kind,
    Membership,
    Seat,
    SeatConflict,
    SeatRefused,
    Study,
)


class LabelRecordError(ValueError):
    """One record cannot be imported; the message names the field."""


def record_name(value, key: str, field=None) -> str:
    """A record's `key` (its `value`) as a name: a non-empty string, stripped, that `field`
    (a model field, if given) accepts by its own validators (its length, Django's username
    rules for an annotator); else LabelRecordError naming the key. The import creates
    accounts and groups under these names, and a name refused here could not have been
    typed on any page."""
    if not isinstance(value, str) or not value.strip():
        raise LabelRecordError(f"{key}: must be a non-empty string, got {value!r}")
    value = value.strip()
    if field is not None:
        try:
            field.run_validators(value)
        except ValidationError as e:
            raise LabelRecordError(f"{key}: {' '.join(e.messages)}") from None
    return value


class Seating:
    def __init__(
        self, study: Study, create_members: bool, judge: bool, report, kind: str = Kind.STUDENT
    ) -> None:
        self.study, self.create_members, self.judge = study, create_members, judge
        self.kind = kind  # of the groups it creates, and so of the members it seats there
        self.report = report  # LabelImportReport: created users and groups, assignments
        self.users: dict[str, object] = {}
        self.groups: dict[str, Group] = {}
        # (group name, username) -> the seated user, or why they cannot sit there
        self.seats: dict[tuple[str, str], object] = {}
        # (conversation pk, group name) -> None once assigned, or why it cannot be
        self.assigned: dict[tuple[int, str], LabelRecordError | None] = {}
        # the batch's conversations -> the names of their groups (the database's and this
        # import's), and the assignments not written yet (conversations of one group only)
        self.groups_of: dict[int, set[str]] = defaultdict(set)
        self.pending: list[tuple[int, str]] = []
        # what this import created, so that an import of which no label lands leaves none
        # of it (_Created.remove)
        self.created = _Created()

    def new_batch(self, assigned: Iterable[tuple[int, str]]) -> None:
        """A batch's conversations with the names of the groups they have already."""
        self.groups_of = defaultdict(set)
        for conversation_id, group_name in assigned:
            self.groups_of[conversation_id].add(group_name)

    # -- seats -------------------------------------------------------------

    def seat(self, group_name: str, username: str):
        """The user seated in the group (as annotator, or judge with --judge), once per
        pair: every record of a refused pair gets the same error."""
        key = (group_name, username)
        if key not in self.seats:
            # nothing to roll back on a refusal: only an existing user can hold another seat
            try:
                self.seats[key] = self._seat(self.group(group_name), username)
            except LabelRecordError as e:
                self.seats[key] = e
        seat = self.seats[key]
        if isinstance(seat, LabelRecordError):
            raise LabelRecordError(str(seat))
        return seat

    def group(self, name: str) -> Group:
        if name not in self.groups:
            group = Group.objects.filter(study=self.study, name=name).first()
            if group is None:
                if not self.create_members:
                    raise LabelRecordError(
                        f"group: unknown group {name!r} in study {self.study} "
                        "(use --create-members to create it)"
                    )
                group = Group.objects.create(study=self.study, name=name, kind=self.kind)
                self.report.created_groups.append(name)
                self.created.groups.append(group.pk)
            self.groups[name] = group
        if self.groups[name].open_sorting:
            raise LabelRecordError(f"group: {self.groups[name].open_sort_refusal()}")
        return self.groups[name]

    def _seat(self, group: Group, username: str):
        user = self.user(username)
        as_ = Seat.JUDGE if self.judge else Seat.ANNOTATOR
        held = group.seat_of(user)
        if held is None and not self.create_members:
            role = "a judge" if self.judge else "an annotator"
            raise LabelRecordError(
                f"annotator: {username!r} is not {role} of group {group.name!r} "
                "(use --create-members to add them)"
            )
        member = Membership.objects.filter(study=self.study, user=user).exists()
        try:
            group.seat(user, as_)
        except SeatRefused as e:
            raise LabelRecordError(f"annotator: {e}") from None
        if held is None:
            self.created.seats.append((group, user, as_))
            if as_ == Seat.ANNOTATOR and not member:
                self.created.members.append(user.pk)
        return user

    def user(self, username: str):
        if username not in self.users:
            User = get_user_model()
            user = User.objects.filter(username=username).first()
            if user is None:
                if not self.create_members:
                    raise LabelRecordError(
                        f"annotator: unknown user {username!r} (use --create-members to create it)"
                    )
                user = User(username=username)
                user.set_unusable_password()
                user.save()
                self.report.created_users.append(username)
                self.created.users.append(user.pk)
            self.users[username] = user
        return self.users[username]

    def assign(self, conversation_id: int, group_name: str) -> None:
        """Assign the conversation to the record's group if it is not yet (as well as to
        any other: groups may share a conversation, each with its own rounds), once per
        pair: every record of a refused pair gets the same error. Refused when someone
        would label the conversation in two groups (SeatConflict)."""
        key = (conversation_id, group_name)
        if key not in self.assigned and not self.groups_of[conversation_id] - {group_name}:
            # the conversation's first group: nobody can sit in two groups sharing it, so
            # nothing to check; written with the batch's others (write_pending)
            self.pending.append(key)
            self.assigned[key] = None
        elif key not in self.assigned:
            self.write_pending()  # the checks read the assignments from the database
            try:
                assigned = Conversation.objects.filter(pk=conversation_id).assign(
                    self.groups[group_name]
                )
                self.report.assigned_conversations += assigned
                if assigned:
                    self.created.assignments.append((conversation_id, self.groups[group_name].pk))
                self.assigned[key] = None
                self.groups_of[conversation_id].add(group_name)
            except SeatConflict as e:
                self.assigned[key] = LabelRecordError(f"group: {e}")
        error = self.assigned[key]
        if error is not None:
            raise LabelRecordError(str(error))
        self.groups_of[conversation_id].add(group_name)

    def write_pending(self) -> None:
        """Write the assignments assign() deferred: one statement (COPY on PostgreSQL, unless
        someone assigned one of them meanwhile)."""
        if not self.pending:
            return
        now = timezone.now()
        rows = [(c, self.groups[g].pk, now) for c, g in self.pending]
        insert_assignments(rows)
        self.report.assigned_conversations += len(self.pending)
        self.created.assignments += [(c, self.groups[g].pk) for c, g in self.pending]
        self.pending = []


@dataclass
class _Created:
    """What one import created: accounts, groups, seats (group, user, seat), the study
    memberships those seats brought, assignments (conversation id, group id)."""

    users: list[int] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    seats: list[tuple] = field(default_factory=list)
    members: list[int] = field(default_factory=list)
    assignments: list[tuple[int, int]] = field(default_factory=list)

    def remove(self, study: Study) -> None:
        """Remove all of it, in one transaction: for an import no label of which landed, so
        nothing refers to any of it."""
        with transaction.atomic():
            for conversation_id, group_id in self.assignments:
                Assignment.objects.filter(
                    conversation_id=conversation_id, group_id=group_id
                ).delete()
            for group, user, as_ in self.seats:
                (group.judges if as_ == Seat.JUDGE else group.annotators).remove(user)
            Membership.objects.filter(study=study, user_id__in=self.members).delete()
            Group.objects.filter(pk__in=self.groups).delete()
            get_user_model().objects.filter(pk__in=self.users).delete()
