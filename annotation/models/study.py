"""Studies, their members and their groups: who takes part, in which role, seat and phase."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models

from taxonomy.models import TaxonomyVersion


class Role(models.TextChoices):
    ANNOTATOR = "annotator"
    MODERATOR = "moderator"
    LEAD = "lead"


class Kind(models.TextChoices):
    EXPERT = "expert"
    STUDENT = "student"


class Phase(models.TextChoices):
    OPEN_SORT = "open_sort"
    CLOSED_SORT = "closed_sort"


class Unit(models.TextChoices):
    """What a group's annotators label: a turn (a card) or an episode (models/episodes.py)."""

    TURN = "turn"
    EPISODE = "episode"


class Seat(models.TextChoices):
    ANNOTATOR = "annotator"
    JUDGE = "judge"
    MODERATOR = "moderator"


class Study(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    phase = models.CharField(max_length=20, choices=Phase.choices, default=Phase.CLOSED_SORT)
    discussion_rounds = models.PositiveSmallIntegerField(default=1)
    # The coding filter's rules (annotation/intake/coding_filter.py); {} means the defaults.
    coding_rules = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.slug

    def save(self, *args, **kwargs) -> None:
        # A taxonomy version in use by a study is frozen: changes make a new version.
        if self._state.adding:
            self.taxonomy_version.freeze()
        super().save(*args, **kwargs)

    def role_of(self, user) -> str | None:
        if not user.is_authenticated:
            return None
        if user.is_superuser:
            return Role.LEAD
        # one query (a model instance with only() fetched its study_id again)
        return self.memberships.filter(user=user).values_list("role", flat=True).first()

    def report_versions(self) -> list[TaxonomyVersion]:
        """The versions a report can be computed on: the study's, then each it moved away
        from, newest first (agreement.data computes on the labels a move retired)."""
        moved = [m.from_version for m in self.taxonomy_moves.select_related("from_version")]
        return [self.taxonomy_version, *moved]

    def add_member(self, user, role: str = Role.ANNOTATOR, kind: str = Kind.STUDENT):
        # a new member knows the keys of the study's version from their first card on
        defaults = {"role": role, "kind": kind, "keys_seen_id": self.taxonomy_version_id}
        membership, created = Membership.objects.get_or_create(
            study=self, user=user, defaults=defaults
        )
        return membership


class Membership(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.STUDENT)
    # the taxonomy version whose keys the member last saw on a card: a card of a newer one
    # tells them which keys changed (annotation/hotkeys.key_changes)
    keys_seen = models.ForeignKey(
        TaxonomyVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="uniq_study_member")]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} as {self.role}"


class Group(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.STUDENT)
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="annotation_groups", blank=True
    )
    moderator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="moderated_groups",
    )
    # Reference annotators (an LLM judge, a pilot's rater): their round-1 labels are kept
    # and compared with the consensus, but never vote in the group's rounds.
    judges = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="judged_groups", blank=True
    )
    # "" follows the study's phase; a group may open-sort while the study's others wait
    phase = models.CharField(max_length=20, choices=Phase.choices, blank=True, default="")
    # what its annotators label: turns (cards) or episodes (issue 21)
    unit = models.CharField(
        max_length=10, choices=Unit.choices, default=Unit.TURN, db_default=Unit.TURN
    )

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="uniq_group_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def effective_phase(self) -> str:
        """The group's own phase, or the study's."""
        return self.phase or self.study.phase

    @property
    def open_sorting(self) -> bool:
        return self.effective_phase == Phase.OPEN_SORT

    def open_sort_refusal(self) -> str:
        """Why no label is given on this group's cards now ("" when it is not open-sorting):
        its round-1 labels come from its annotators' free tags at the freeze (the API and
        the label import refuse with it; the card page shows the tag panel instead)."""
        if not self.open_sorting:
            return ""
        return (
            f"group {self.name!r} is in the open sort: its cards take free tags on the card "
            "page, which become round-1 labels at the freeze; no label is given before that"
        )

    def labeller_ids(self) -> set[int]:
        """Who gives labels in the group: its annotators and its judges."""
        return set(self.annotators.values_list("pk", flat=True)) | set(
            self.judges.values_list("pk", flat=True)
        )

    def seated_ids(self) -> set[int]:
        """Everyone who sees the group's labels: labellers and the moderator."""
        return self.labeller_ids() | ({self.moderator_id} if self.moderator_id else set())

    def overlapping_groups(self):
        """The other groups that share a conversation with this one."""
        return (
            Group.objects.filter(assignments__conversation__assignments__group=self)
            .exclude(pk=self.pk)
            .distinct()
        )

    def check_seat(self, user, labels: bool = True) -> None:
        """Refuse a seat that would let `user` see another group's round-1 labels on a card
        they label themselves (or label a card whose labels they see): an annotator or
        judge sits in one group only of those sharing a conversation, so a label's group is
        always known and round 1 stays blind. `labels`: the seat labels (annotator, judge);
        False for a moderator's seat."""
        for other in self.overlapping_groups():
            clash = other.seated_ids() if labels else other.labeller_ids()
            if user.pk in clash:
                raise SeatConflict(
                    f"{user} already sits in group {other.name!r}, which shares conversations "
                    f"with {self.name!r}: one person labels a shared card in one group only, "
                    "so round 1 stays blind"
                )

    def seat_of(self, user) -> str | None:
        """The seat `user` holds in this group, if any (three small queries at most)."""
        if self.moderator_id is not None and self.moderator_id == user.pk:
            return Seat.MODERATOR
        if self.annotators.filter(pk=user.pk).exists():
            return Seat.ANNOTATOR
        if self.judges.filter(pk=user.pk).exists():
            return Seat.JUDGE
        return None

    def seat(self, user, as_: str) -> None:
        """Seat `user` in this group as annotator, judge or moderator: the one rule every
        entry point (the groups page, import_annotations, the demo) goes through. One person
        holds one seat in a group: a moderator who also annotated would decide on their own
        labels, a judge who also voted would not be an outside reference. Raises
        SeatRefused naming both seats; seating someone where they already sit does nothing.
        Across groups sharing a conversation, check_seat: SeatConflict (a SeatRefused).
        Annotators and moderators become members of the study (an existing member keeps a
        higher role); a judge (an LLM) needs no membership."""
        held = self.seat_of(user)
        if held == as_:
            return
        if held is not None:
            raise SeatRefused(
                f"{user.username!r} is {SEAT_WORDS[held]} of group {self.name!r}, "
                f"so cannot be {SEAT_WORDS[as_]} of it"
            )
        self.check_seat(user, labels=as_ != Seat.MODERATOR)
        if as_ == Seat.ANNOTATOR:
            self.study.add_member(user, Role.ANNOTATOR, self.kind)
            self.annotators.add(user)
        elif as_ == Seat.JUDGE:
            self.judges.add(user)
        elif as_ == Seat.MODERATOR:
            membership = self.study.add_member(user, Role.MODERATOR, Kind.EXPERT)
            if membership.role == Role.ANNOTATOR:
                membership.role = Role.MODERATOR
                membership.save(update_fields=["role"])
            self.moderator = user
            self.save(update_fields=["moderator"])
        else:
            raise ValueError(f"unknown seat {as_!r}")


def check_groups_can_share(group: Group, other: Group) -> None:
    """Refuse to let `group` and `other` share a conversation when someone labels in one of
    them and sits in the other (see Group.check_seat)."""
    for a, b in ((group, other), (other, group)):
        clash = a.labeller_ids() & b.seated_ids()
        if clash:
            User = get_user_model()
            names = ", ".join(
                sorted(User.objects.filter(pk__in=clash).values_list("username", flat=True))
            )
            raise SeatConflict(
                f"groups {group.name!r} and {other.name!r} cannot share conversations: "
                f"{names} would sit in both (one person labels a shared card in one group "
                "only, so round 1 stays blind)"
            )


SEAT_WORDS = {
    Seat.ANNOTATOR: "an annotator",
    Seat.JUDGE: "a judge",
    Seat.MODERATOR: "the moderator",
}


class SeatRefused(ValueError):
    """A user asked to sit in a group where they already hold another seat, or in a group
    sharing a conversation with one where they sit (SeatConflict)."""


class SeatConflict(SeatRefused):
    """A seat or an assignment would put one person in two groups sharing a conversation."""
