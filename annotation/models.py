"""Studies, conversations, turns (cards), groups, annotations and jobs. DESIGN.md fixes the
words; one word per idea."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, models, transaction
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from taxonomy.models import Axis, Category, TaxonomyVersion, Type

from .conversation_keys import MAX_LENGTH as KEY_MAX_LENGTH
from .conversation_keys import give_keys
from .evidence import EvidenceSpan
from .limits import TextLimit


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


class Seat(models.TextChoices):
    ANNOTATOR = "annotator"
    JUDGE = "judge"
    MODERATOR = "moderator"


class Source(models.TextChoices):
    BROWSER = "browser"
    IMPORT = "import"
    API = "api"
    PROPOSAL = "proposal"  # old rows only: a mapped proposal once relabelled (no longer)
    # round-1 labels an expert gave as free tags in an open sort, mapped at the freeze through
    # the board's one tag-to-type mapping (annotation/opensort): derived from their own tags only
    OPEN_SORT = "open_sort"


class CardStatus(models.TextChoices):
    OPEN = "open"  # round 1 under way: blind
    DISPUTED = "disputed"  # label sets differed: discussion round(s) under way
    ESCALATED = "escalated"  # still different after the discussion rounds: the moderator's
    AGREED = "agreed"  # a consensus exists


class Method(models.TextChoices):
    UNANIMOUS = "unanimous"
    DISCUSSION = "discussion"
    MODERATOR = "moderator"
    SINGLE = "single"  # a group of one annotator: their labels are the consensus


class GoldMethod(models.TextChoices):
    GROUPS_AGREE = "groups_agree"  # every group's consensus is the same set (derived, no row)
    LEAD = "lead"  # the groups' consensus labels differ: the lead decided


class JobKind(models.TextChoices):
    IMPORT = "import"
    AGREEMENT = "agreement"
    EXPORT = "export"
    SPLIT = "split"  # an LLM proposes where conversations change topic (annotation/intake)
    # the coding filter over the study's conversations: a dry run, or setting aside the ones
    # the rules drop (params: filter, apply; annotation/intake/coding_report.filter_study)
    FILTER = "filter"


class SetAside(models.TextChoices):
    """Why a conversation is not in the study's set (it stays, as population or provenance)."""

    NO = "", "in the set"
    SAMPLE = "sample", "not drawn by the sample"
    SPLIT = "split", "split into single-topic conversations"
    FILTERED = "filtered", "dropped by the coding filter"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ProposalStatus(models.TextChoices):
    PENDING = "pending"
    ACCEPTED = "accepted"  # a new taxonomy version has the type
    MAPPED = "mapped"  # an existing type covers it; suggested to the proposer, never stored
    REJECTED = "rejected"


LABEL_IMPORT = "annotations"  # job.params["what"] of a label import (an IMPORT job)
# job.params["what"] of the coding filter's dry run over a study (an IMPORT job that reads)
FILTER_DRY_RUN = "filter_dry_run"


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


def _unfinished_imports():
    return Job.objects.filter(kind=JobKind.IMPORT).exclude(status=JobStatus.DONE).values("pk")


class ConversationQuerySet(models.QuerySet):
    def in_set(self):
        """The study's conversation set: not set aside by a sample or a split, and not of an
        import that is not done (visible)."""
        return self.visible().filter(set_aside=SetAside.NO)

    def visible(self):
        """The conversations a lead may see and use: not those of an import job that is not
        done yet (still running, queued to resume after its worker was lost, or failed and
        being rolled back). An import never shows half of a file. Conversations written
        outside a job (the command line, the demo) have no job and are always visible."""
        return self.exclude(import_job__in=_unfinished_imports())

    def unassigned(self):
        """Conversations of the set that no group has yet (a set-aside one is never offered
        for assignment)."""
        return self.in_set().filter(assignments__isnull=True)

    def assign(self, group: Group) -> int:
        """Assign every conversation of this queryset to `group` as well (all its turns with
        it); a conversation may belong to several groups, each running its own rounds on it.
        Returns how many were newly assigned. Raises SeatConflict when a person would sit in
        two groups sharing a conversation."""
        new = self.exclude(assignments__group=group)
        others = Group.objects.filter(assignments__conversation__in=new).exclude(pk=group.pk)
        for other in others.distinct():
            check_groups_can_share(group, other)
        ids = list(new.values_list("pk", flat=True))
        Assignment.objects.bulk_create(
            [Assignment(conversation_id=pk, group=group) for pk in ids], ignore_conflicts=True
        )
        return len(ids)

    def assigned_to(self, group: Group):
        return self.filter(assignments__group=group)

    def bulk_create(self, objs, *args, **kwargs):
        """As QuerySet.bulk_create; a conversation without a key gets the next free one of
        its study first (conversation_keys.give_keys), in the order of `objs`."""
        objs = list(objs)
        by_study: dict[int, list] = {}
        for obj in objs:
            if not obj.key:
                by_study.setdefault(obj.study_id, []).append(obj)
        for study_id, conversations in by_study.items():
            Conversation.objects.filter(study_id=study_id).give_keys(conversations)
        return super().bulk_create(objs, *args, **kwargs)

    def give_keys(self, conversations) -> None:
        """Give each of `conversations` without a key the next free key among these (every
        conversation of their study), in order: conversation_keys.give_keys."""
        give_keys(self, conversations)

    def sample(self, n: int, seed: int) -> ConversationQuerySet:
        """`n` of these conversations drawn at random; the same seed over the same rows draws
        the same ones, so an assignment can be repeated and reported."""
        ids = list(self.visible().order_by("id").values_list("id", flat=True))
        if n > len(ids):
            raise ValueError(f"asked for {n} conversations, only {len(ids)} available")
        return self.filter(pk__in=random.Random(seed).sample(ids, n))


class Conversation(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="conversations")
    # The dataset's own id. Not unique in general: WildChat's conversation_hash repeats.
    external_id = models.CharField(max_length=255, db_index=True)
    # Its public name, unique in the study: the external id, `<id>~2`, `~3`... for the later
    # ones with the same id (conversation_keys). Given when it is written, never changed.
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    source_format = models.CharField(max_length=30)
    source_file = models.CharField(max_length=500, blank=True)
    source_line = models.PositiveIntegerField(null=True, blank=True)
    system_prompt = models.TextField(blank=True)
    preamble = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    n_turns = models.PositiveIntegerField(default=0)
    groups = models.ManyToManyField(
        Group, through="Assignment", related_name="conversations", blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Intake (issue 10). db_default on every new column: the importer's COPY names its
    # columns and leaves these to the database.
    # Not in the study's set, and why: not drawn by a sample, or split into parts.
    set_aside = models.CharField(
        max_length=10, choices=SetAside.choices, default="", db_default="", blank=True
    )
    # A part of a split conversation: the original (kept, set aside) and where in it this
    # part starts (the original's turn index of this part's turn 1).
    split_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="split_parts"
    )
    split_first_turn = models.PositiveIntegerField(null=True, blank=True)
    # The splitting job that last considered it (asked the model about it, or skipped it):
    # the split check's entries are the conversations a splitting job considered
    # (intake/splitcheck/entries.py), split or left whole.
    split_considered_by = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What the import read (format, id, position, content), so a re-import adds nothing twice.
    fingerprint = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The import job that wrote it, so an interrupted import can be resumed or rolled back.
    import_job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ConversationQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["study", "fingerprint"], name="conv_study_fingerprint")]
        constraints = [models.UniqueConstraint(fields=["study", "key"], name="conv_study_key")]

    def __str__(self) -> str:
        return self.key or self.external_id

    def save(self, *args, **kwargs) -> None:
        if not self.key and self._state.adding:
            give_keys(Conversation.objects.filter(study_id=self.study_id), [self])
        super().save(*args, **kwargs)

    def group_of(self, user) -> Group | None:
        """The group in which `user` labels this conversation (one at most: Group.check_seat)."""
        return (
            Group.objects.filter(assignments__conversation=self)
            .filter(Q(annotators=user) | Q(judges=user))
            .order_by("name")
            .first()
        )


class Assignment(models.Model):
    """A conversation assigned to a group: the group labels every turn of it. Several groups
    may share a conversation (a calibration set, an overlap share); each runs its own rounds
    and consensus on it."""

    # db_index=False on both: the unique (conversation, group) and the (group, conversation)
    # indexes serve lookups by either
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    group = models.ForeignKey(
        Group, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "group"], name="uniq_assignment")
        ]
        indexes = [models.Index(fields=["group", "conversation"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} -> {self.group_id}"


class TurnQuerySet(models.QuerySet):
    def visible(self):
        """The turns of visible conversations (ConversationQuerySet.visible)."""
        return self.exclude(conversation__import_job__in=_unfinished_imports())

    def for_annotator(self, study: Study, user):
        """The cards `user` annotates in `study`: every turn of their groups' conversations."""
        # one row per turn: an annotator sits in one group only of those sharing a
        # conversation (Group.check_seat)
        # (through the group's annotators, not `group_id IN (my groups)`: SQLite then walked
        # the study's every turn, 64 ms instead of 5 for the next card of 5,554)
        return self.filter(
            conversation__study=study, conversation__assignments__group__annotators=user
        ).order_by("conversation_id", "index")

    def annotated_by(self, user, round: int = 1):
        """Annotate `done`: `user` has labelled the card in `round`; in round 1 a tag set of
        the open sort counts too (annotation/opensort/tagging.py)."""
        mine = Annotation.objects.filter(
            turn=OuterRef("pk"), annotator=user, round=round, is_current=True
        )
        if round != 1:
            return self.annotate(done=Exists(mine))
        tagged = TagSet.objects.filter(turn=OuterRef("pk"), annotator=user)
        done = ExpressionWrapper(Q(Exists(mine)) | Q(Exists(tagged)), output_field=BooleanField())
        return self.annotate(done=done)

    def todo(self, user, round: int = 1):
        """The cards of this queryset that `user` has not labelled yet in `round`."""
        return self.annotated_by(user, round).filter(done=False)

    def put_off_by(self, user):
        """Annotate `put_off_at`: when `user` last skipped or flagged the card (None: never)."""
        skips = CardSkip.objects.filter(turn=OuterRef("pk"), annotator=user)
        return self.annotate(put_off_at=Subquery(skips.values("created_at")[:1]))

    def next_for(self, user, turn: Turn | None = None) -> int | None:
        """The id of `user`'s next card to label: the first not yet labelled after `turn`,
        else from the start; the cards they skipped or flagged come last, oldest put off
        first (so a card just skipped is the very last)."""
        todo = self.todo(user).put_off_by(user)
        fresh = todo.filter(put_off_at__isnull=True)
        for cards in (fresh.after(turn) if turn else fresh, fresh):
            found = cards.values_list("pk", flat=True).first()
            if found is not None:
                return found
        later = todo.filter(put_off_at__isnull=False).order_by("put_off_at", "pk")
        return later.values_list("pk", flat=True).first()

    def with_status_for(self, user):
        """Annotate `status`: the card's state in `user`'s group (no state row: open)."""
        states = CardState.objects.filter(turn=OuterRef("pk"), group__annotators=user)
        status = Subquery(states.values("status")[:1])
        return self.annotate(status=Coalesce(status, models.Value(CardStatus.OPEN)))

    def after(self, turn: Turn):
        c, i = turn.conversation_id, turn.index
        return self.filter(Q(conversation_id__gt=c) | Q(conversation_id=c, index__gt=i))


class Turn(models.Model):
    """One user message plus the reply that follows (FORMATS.md section 0). The UI's card."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField(help_text="1-based position in the conversation")
    user_text = models.TextField(blank=True)
    reply_text = models.TextField(blank=True)
    # tool calls, tool results, reasoning: shown in the reply, not part of its text
    reply_parts = models.JSONField(default=list, blank=True)
    reply_empty = models.BooleanField(default=False)
    reply_missing = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)

    objects = TurnQuerySet.as_manager()

    class Meta:
        ordering = ["conversation_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "index"], name="uniq_turn_index")
        ]

    def __str__(self) -> str:
        return f"{self.conversation.key}#{self.index}"


class AnnotationQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class Annotation(models.Model):
    """(turn, annotator, round) -> a set of types. An empty set is "no smell"; no row at all
    is "not yet annotated". Never overwritten: a revision inserts a new row and clears
    `is_current` on the old one, so the history stays."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="annotations")
    # db_index=False: the (annotator, round, is_current) index serves lookups by annotator;
    # a second index would only slow down every insert (the label import's above all)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False
    )
    round = models.PositiveSmallIntegerField(default=1)
    types = models.ManyToManyField(Type, blank=True, related_name="annotations")
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    # limits (annotation/limits.py) are validators: nothing stored before them is refused
    note = models.TextField(blank=True, validators=[TextLimit("note")])
    evidence = models.TextField(blank=True, validators=[TextLimit("evidence")])
    # where `evidence` is quoted from (annotation/evidence.py): a turn of the card's
    # conversation up to the card, its user message or reply, [start, end) in the stored
    # text; all null for free-text evidence (or none)
    evidence_turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    evidence_part = models.CharField(
        max_length=5, null=True, blank=True, choices=[("user", "user"), ("reply", "reply")]
    )
    evidence_start = models.PositiveIntegerField(null=True, blank=True)
    evidence_end = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.BROWSER)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Taxonomy evolution (annotation/evolution/). A study moving to a new version retires
    # its current rows (`retired_by` the move: the old version's labels as they stood) and
    # carries each to a new row under the new version (`carried_from`). A label of a split
    # type waits for its annotator to choose the side(s): `split_pending` names the old
    # codes waiting ("" none), and until then the row is no record of any statistic.
    # db_index=False: the partial index below serves the old version's report.
    carried_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    retired_by = models.ForeignKey(
        "TaxonomyMove",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    split_pending = models.CharField(max_length=500, blank=True, default="", db_default="")

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["turn", "annotator", "round"],
                condition=Q(is_current=True),
                name="uniq_current_annotation",
            )
        ]
        indexes = [
            models.Index(fields=["annotator", "round", "is_current"]),
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="annotation_retired_by",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.turn} r{self.round}"

    @classmethod
    def record(
        cls,
        *,
        turn: Turn,
        annotator,
        types: list[Type],
        round: int = 1,
        note: str = "",
        evidence: str = "",
        confidence: int | None = None,
        source: str = Source.BROWSER,
        taxonomy_version: TaxonomyVersion | None = None,
        span: EvidenceSpan | None = None,
    ) -> Annotation:
        """Save a new revision of (turn, annotator, round); the previous one stays as
        history. Two concurrent saves both land, one after the other, and neither is lost."""
        version = taxonomy_version or turn.conversation.study.taxonomy_version
        for attempt in range(3):
            try:
                with transaction.atomic():
                    previous = (
                        cls.objects.filter(
                            turn=turn, annotator=annotator, round=round, is_current=True
                        )
                        .prefetch_related("types")
                        .first()
                    )
                    if (
                        previous is not None
                        and not previous.split_pending
                        and previous.same_as(types, note, evidence, confidence, span)
                    ):
                        # a double-submitted form changes nothing the second time
                        return previous
                    if previous is not None:
                        cls.objects.filter(pk=previous.pk).update(is_current=False)
                    annotation = cls.objects.create(
                        turn=turn,
                        annotator=annotator,
                        round=round,
                        taxonomy_version=version,
                        note=note,
                        evidence=evidence,
                        confidence=confidence,
                        source=source,
                        **(span.fields() if span else {}),
                    )
                    annotation.types.add(*types)  # a new row: set() would read its types first
                return annotation
            except IntegrityError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def same_as(self, types, note: str, evidence: str, confidence: int | None, span=None) -> bool:
        return (
            self.codes == frozenset(t.code for t in types)
            and (self.note, self.evidence, self.confidence) == (note, evidence, confidence)
            and self.span == span
        )

    @property
    def span(self) -> EvidenceSpan | None:
        """Where the evidence is quoted from, or None (free-text evidence, or none)."""
        if self.evidence_turn_id is None:
            return None
        return EvidenceSpan(
            self.evidence_turn_id, self.evidence_part, self.evidence_start, self.evidence_end
        )

    @property
    def codes(self) -> frozenset[str]:
        """The label set as type codes (codes are stable across taxonomy versions)."""
        return frozenset(t.code for t in self.types.all())

    @classmethod
    def submit(cls, *, turn: Turn, group: Group, annotator, round: int = 1, **fields) -> Annotation:
        """What every entry point (page, API, import) calls: check that `round` is open for
        this card, record the labels, and move the card on (agreed, disputed, escalated).
        The card's state row is locked first, so two annotators submitting at the same
        moment are seen one after the other and the card never misses its transition."""
        with transaction.atomic():
            state = CardState.lock(turn, group)
            state.check_open_for(round)
            annotation = cls.record(turn=turn, annotator=annotator, round=round, **fields)
            state.advance()
            # their own answer to a type an expert's decision suggested to them here
            Proposal.objects.answer(annotator, turn)
        return annotation


class RoundClosed(Exception):
    """Labels for a round this card is not in (round 1 after it closed, round 2 too early)."""


class AlreadyDecided(Exception):
    def __init__(self, consensus: Consensus):
        self.consensus = consensus
        who = consensus.decided_by or "its annotators"
        super().__init__(
            f"This card already has a consensus ({consensus.method}, by {who}, "
            f"{consensus.decided_at:%Y-%m-%d %H:%M} UTC): nothing was changed."
        )


class NotDecidable(Exception):
    """A consensus asked for on a card that is not disputed or escalated (still in round 1,
    or nobody has labelled it): its annotators have not disagreed yet."""


class CardStateQuerySet(models.QuerySet):
    def counts_by_group(self, study: Study) -> dict[int, dict[str, int]]:
        """{group id: {status: cards}}; cards nobody has labelled yet have no row and are
        counted as open by the caller (total turns minus the rest)."""
        out: dict[int, dict[str, int]] = {}
        rows = (
            self.filter(group__study=study)
            .values_list("group_id", "status")
            .annotate(n=models.Count("pk"))
            .order_by()
        )
        for group_id, status, n in rows:
            out.setdefault(group_id, {})[status] = n
        return out

    def with_labelled_by(self, user):
        """Annotate `labelled`: whether `user` has a current label in the round under way,
        so an annotator's "to discuss" queue splits into their turn and waiting for others."""
        mine = Annotation.objects.filter(
            turn_id=OuterRef("turn_id"), annotator=user, round=OuterRef("round"), is_current=True
        )
        return self.annotate(labelled=Exists(mine))

    def involving_type(self, code: str):
        """Cards on which any annotation, in any round, current or revised away, used `code`."""
        used = Annotation.objects.filter(turn_id=OuterRef("turn_id"), types__code=code)
        return self.filter(Exists(used))


class RoundRules:
    """The round rule on a card's `status` and `round`, in one place: CardState applies it
    to its row, and the batched label import (importers/label_batch.py) to the same values
    in memory, so a submit and an imported record move a card alike."""

    status: str
    round: int

    def check_open_for(self, round: int) -> None:
        if round == 1 and self.status != CardStatus.OPEN:
            raise RoundClosed(
                "This card has left round 1: every annotator of its group has labelled it, "
                "so round-1 labels can no longer change."
            )
        if round > 1 and (self.status != CardStatus.DISPUTED or round != self.round):
            if self.status == CardStatus.DISPUTED:
                raise RoundClosed(f"This card is in round {self.round}, not round {round}.")
            raise RoundClosed(f"Round {round} is not open for this card (it is {self.status}).")

    def step(
        self, n_annotators: int, label_sets: list[frozenset[str]], discussion_rounds: int
    ) -> tuple[bool, str | None]:
        """The rule of `advance` on plain values, so a batched import applies exactly the
        same one: given the group's size and the current label sets of the round under way,
        move status and round in memory. Returns (moved, consensus method or None)."""
        if self.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
            return False, None
        # an empty group waits for its annotators
        if n_annotators < 1 or len(label_sets) < n_annotators:
            return False, None
        if len(set(label_sets)) == 1:
            self.status = CardStatus.AGREED
            if n_annotators == 1:
                return True, Method.SINGLE
            return True, Method.UNANIMOUS if self.round == 1 else Method.DISCUSSION
        if self.round - 1 >= discussion_rounds:
            self.status = CardStatus.ESCALATED
        else:
            self.status, self.round = CardStatus.DISPUTED, self.round + 1
        return True, None


class CardState(RoundRules, models.Model):
    """Where a card stands in its group. Kept up to date on every submit and decision, so
    queues and per-state counts are indexed lookups, never a scan over labels."""

    # db_index=False on both: the unique (turn, group) and the (group, status) indexes serve
    # lookups by either
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="states", db_index=False)
    group = models.ForeignKey(
        Group, on_delete=models.CASCADE, related_name="card_states", db_index=False
    )
    status = models.CharField(max_length=10, choices=CardStatus.choices, default=CardStatus.OPEN)
    round = models.PositiveSmallIntegerField(default=1, help_text="the round under way")
    updated_at = models.DateTimeField(auto_now=True)

    objects = CardStateQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["group", "status"])]
        # a card shared by several groups has one state in each
        constraints = [models.UniqueConstraint(fields=["turn", "group"], name="uniq_card_state")]

    def __str__(self) -> str:
        return f"{self.turn_id}: {self.status} (round {self.round})"

    @classmethod
    def lock(cls, turn: Turn, group: Group) -> CardState:
        """The card's state row, created on first use and locked for this transaction."""
        cls.objects.get_or_create(turn=turn, group=group)
        state = (
            cls.objects.select_for_update()
            .select_related("group__study")
            .get(turn=turn, group=group)
        )
        state.turn = turn
        return state

    @property
    def revealed(self) -> bool:
        """Once round 1 is over, the group's labels are no longer blind to each other."""
        return self.status != CardStatus.OPEN

    def current_labels(self, round: int | None = None) -> dict[int, Annotation]:
        """{annotator id: current annotation} of the group's annotators in `round`."""
        annotations = (
            Annotation.objects.current()
            .filter(
                turn_id=self.turn_id,
                round=round or self.round,
                annotator__in=self.group.annotators.all(),
            )
            .prefetch_related("types")
        )
        return {a.annotator_id: a for a in annotations}

    def advance(self) -> Consensus | None:
        """Move on once every annotator of the group has labelled the round under way:
        identical sets -> consensus (unanimous in round 1, discussion later); different ->
        round 2 opens, or after the study's discussion rounds, escalated to the moderator.
        A group of one annotator has no rounds: the labels are its consensus (`single`)."""
        if self.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
            return None
        labels = self.current_labels()
        if any(a.split_pending for a in labels.values()):
            # a label of a split type waits for its annotator's side: nothing is guessed
            return None
        moved, method = self.step(
            self.group.annotators.count(),
            [a.codes for a in labels.values()],
            self.group.study.discussion_rounds,
        )
        if not moved:
            return None
        consensus = None
        if method is not None:
            consensus = Consensus.create_for(self, method, next(iter(labels.values())).types.all())
        self.save(update_fields=["status", "round", "updated_at"])
        return consensus

    @classmethod
    def decide(cls, turn: Turn, group: Group, moderator, types, rationale: str = "") -> Consensus:
        """The moderator's word on a disputed or escalated card. Two moderators deciding at
        the same moment: the row lock makes the second wait and then find the card decided
        (AlreadyDecided); the partial unique index on current consensus is the backstop.
        A card still in round 1 is refused (NotDecidable): deciding it would end round 1 for
        its annotators without their labels. Every entry point comes through here."""
        with transaction.atomic():
            state = cls.lock(turn, group)
            existing = Consensus.objects.current().filter(turn=turn, group=group).first()
            if existing is not None:
                raise AlreadyDecided(existing)
            if state.status not in (CardStatus.DISPUTED, CardStatus.ESCALATED):
                raise NotDecidable(
                    "Round 1 is still open for this card: its annotators label it blind "
                    "first; a consensus is decided only on a disputed or escalated card. "
                    "Nothing was changed."
                    if state.status == CardStatus.OPEN
                    else f"This card is {state.status}: a consensus is decided only on a "
                    "disputed or escalated card. Nothing was changed."
                )
            try:
                with transaction.atomic():
                    consensus = Consensus.create_for(
                        state, Method.MODERATOR, types, decided_by=moderator, rationale=rationale
                    )
            except IntegrityError:
                current = Consensus.objects.current().get(turn=turn, group=group)
                raise AlreadyDecided(current) from None
            state.status = CardStatus.AGREED
            state.save(update_fields=["status", "updated_at"])
        return consensus

    def reopen(self) -> None:
        """Send a decided or escalated card back to its annotators for one more round (a
        proposal accepted on it): the consensus stays in the history, no longer current."""
        Consensus.objects.current().filter(turn_id=self.turn_id, group_id=self.group_id).update(
            is_current=False
        )
        if self.status != CardStatus.OPEN:
            self.status, self.round = CardStatus.DISPUTED, self.round + 1
            self.save(update_fields=["status", "round", "updated_at"])


class ConsensusQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class Decision(models.Model):
    """What a consensus and a study-level gold label share: who decided, when, on which
    taxonomy version, why; append-only (a later decision keeps the old row, not current)."""

    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(default=timezone.now)
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    rationale = models.TextField(blank=True, validators=[TextLimit("rationale")])
    is_current = models.BooleanField(default=True)
    # taxonomy evolution, as on Annotation: the row carried to the new version, and the move
    # that retired this one (the old version's decision as it stood)
    carried_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    retired_by = models.ForeignKey(
        "TaxonomyMove",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.turn_id}: {self.method}"

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(t.code for t in self.types.all())


class Consensus(Decision):
    """The gold label of a card in its group, with its provenance. Append-only: a reopened
    card keeps its old consensus with is_current=False."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="consensus")
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="consensus")
    types = models.ManyToManyField(Type, blank=True, related_name="consensus")
    method = models.CharField(max_length=12, choices=Method.choices)
    from_round = models.PositiveSmallIntegerField()

    objects = ConsensusQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "consensus"
        constraints = [
            # one current consensus per card and group: groups sharing a card decide apart
            models.UniqueConstraint(
                fields=["turn", "group"],
                condition=Q(is_current=True),
                name="uniq_current_consensus",
            )
        ]
        indexes = [
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="consensus_retired_by",
            )
        ]

    @classmethod
    def create_for(cls, state: CardState, method: str, types, **fields) -> Consensus:
        consensus = cls.objects.create(
            turn_id=state.turn_id,
            group=state.group,
            method=method,
            from_round=state.round,
            taxonomy_version=state.group.study.taxonomy_version,
            **fields,
        )
        consensus.types.add(*types)  # a new row: set() would read its types first
        return consensus


class StudyGoldQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class StudyGold(Decision):
    """The study-level gold label of a card several groups labelled (an overlap card) whose
    groups' consensus labels differ: the lead decides it, with the same provenance as a
    consensus. Where the groups agree, the study gold is their common set (method
    `groups_agree`) and needs no row. Append-only: a later decision keeps the old row with
    is_current=False."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_gold")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="study_gold")
    types = models.ManyToManyField(Type, blank=True, related_name="study_gold")
    method = models.CharField(max_length=12, choices=GoldMethod.choices, default=GoldMethod.LEAD)

    objects = StudyGoldQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "study gold"
        constraints = [
            models.UniqueConstraint(
                fields=["turn"], condition=Q(is_current=True), name="uniq_current_study_gold"
            )
        ]
        indexes = [
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="study_gold_retired_by",
            )
        ]

    @classmethod
    def disputed_cards(cls, study: Study) -> list[tuple[Turn, list[Consensus]]]:
        """The overlap cards whose groups have all decided and differ, with no study-level
        gold yet: the lead's queue, oldest card first. Reads only the cards with a current
        consensus in two groups or more (the overlap is a share of the study)."""
        shared = (
            Consensus.objects.current()
            .filter(group__study=study)
            .values("turn_id")
            .annotate(n=models.Count("id"))
            .filter(n__gte=2)
            .values("turn_id")
        )
        decided = cls.objects.current().filter(turn_id=OuterRef("turn_id"))
        consensus = (
            Consensus.objects.current()
            .filter(turn_id__in=shared)
            .exclude(Exists(decided))
            .select_related("group", "decided_by", "turn__conversation")
            .prefetch_related("types")
            .order_by("turn__conversation_id", "turn__index", "group__name")
        )
        by_turn: dict[int, list[Consensus]] = {}
        for c in consensus:
            by_turn.setdefault(c.turn_id, []).append(c)
        n_groups = dict(
            Assignment.objects.filter(conversation__turns__in=list(by_turn))
            .values_list("conversation_id")
            .annotate(n=models.Count("id"))
            .order_by()
        )
        out = []
        for rows in by_turn.values():
            turn = rows[0].turn
            n = n_groups.get(turn.conversation_id, 0)
            _, method = study_gold_of([c.codes for c in rows], n, None)
            if method == "pending":
                out.append((turn, rows))
        return out

    @classmethod
    def decide(cls, turn: Turn, lead, types, rationale: str) -> StudyGold:
        """The lead's study-level gold of an overlap card whose groups disagree. A second
        decision (double submit, two leads at once) raises AlreadyDecidedGold: the partial
        unique index on the current row is the backstop."""
        study = turn.conversation.study
        existing = cls.objects.current().filter(turn=turn).first()
        if existing is not None:
            raise AlreadyDecidedGold(existing)
        try:
            with transaction.atomic():
                gold = cls.objects.create(
                    study=study,
                    turn=turn,
                    method=GoldMethod.LEAD,
                    decided_by=lead,
                    taxonomy_version=study.taxonomy_version,
                    rationale=rationale,
                )
                gold.types.set(types)
        except IntegrityError:
            raise AlreadyDecidedGold(cls.objects.current().get(turn=turn)) from None
        return gold


class AlreadyDecidedGold(Exception):
    def __init__(self, gold: StudyGold):
        self.gold = gold
        super().__init__(
            f"This card already has a study-level gold (by {gold.decided_by}, "
            f"{gold.decided_at:%Y-%m-%d %H:%M} UTC): nothing was changed."
        )


def study_gold_of(consensus_sets: list[frozenset], n_groups: int, lead: frozenset | None):
    """(labels, method) of a card's study-level gold from its groups' current consensus
    sets, the number of groups it is assigned to and the lead's decision: the lead's
    decision if any; else the common set when every group has decided and all agree
    (`groups_agree`; a card of one group: that group's consensus); else (None, "pending")
    when every group has decided and they differ (the lead's queue); else (None, None)."""
    if lead is not None:
        return lead, GoldMethod.LEAD
    if n_groups == 0 or len(consensus_sets) < n_groups:
        return None, None
    if len(set(consensus_sets)) == 1:
        return consensus_sets[0], GoldMethod.GROUPS_AGREE
    return None, "pending"


class Comment(models.Model):
    """The discussion thread of a disputed card: annotators and the moderator."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="comments")
    # the group whose discussion this is: groups sharing a card discuss apart
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    round = models.PositiveSmallIntegerField()
    text = models.TextField(validators=[TextLimit("comment")])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.author} on {self.turn_id}"


class SkipKind(models.TextChoices):
    SKIP = "skip", "skipped"
    FLAG = "flag", "flagged"


class CardSkip(models.Model):
    """An annotator put a card off: skipped it, or flagged it for later with a reason. Either
    way the card comes back at the end of their queue; flags are listed for the lead. One row
    per annotator and card: the latest skip or flag replaces the one before."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="card_skips"
    )
    kind = models.CharField(max_length=4, choices=SkipKind.choices, default=SkipKind.SKIP)
    reason = models.TextField(blank=True, validators=[TextLimit("flag")])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "turn"], name="one_skip_per_card")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} {self.kind} {self.turn_id}"

    @classmethod
    def put_off(cls, turn: Turn, annotator, kind: str, reason: str = "") -> CardSkip:
        """Record a skip or flag now, in place of the annotator's earlier one on the card."""
        row, _ = cls.objects.update_or_create(
            turn=turn,
            annotator=annotator,
            defaults={"kind": kind, "reason": reason, "created_at": timezone.now()},
        )
        return row


class CardTime(models.Model):
    """Active time an annotator spent on a card: the tab visible and input within the last
    minute. The browser reports it in small increments, added with F() so two tabs never
    lose each other's time."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="times")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="card_times"
    )
    active_ms = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "turn"], name="one_time_per_card")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} {self.active_ms} ms on {self.turn_id}"


LOST_JOB_ERROR = (
    "The worker running this job stopped (killed or crashed) before it finished; "
    "start the job again."
)
# A conversation import whose worker was lost is resumed (queued again; the re-run skips what
# is there by fingerprint) until it has started this many times; then it fails, rolled back.
MAX_IMPORT_RUNS = 3
RESUMED_MESSAGE = "Its worker stopped; queued again to resume where it was."
LOST_IMPORT_ERROR = (
    f"The workers running this import stopped (killed or crashed) {MAX_IMPORT_RUNS} times "
    "before it finished; what it had written was removed. Start the import again."
)


# conversations deleted per query when a failed import is rolled back
DELETE_CHUNK = 2000


class JobQuerySet(models.QuerySet):
    def lost(self, older_than: float | None = None):
        """Running jobs whose worker has not given a sign of life for `older_than` seconds
        (default settings.JOB_LOST_SECONDS): a running worker beats every few seconds."""
        seconds = settings.JOB_LOST_SECONDS if older_than is None else older_than
        cutoff = timezone.now() - timedelta(seconds=seconds)
        return self.filter(status=JobStatus.RUNNING).filter(
            Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        )

    def reap_lost(self, older_than: float | None = None, resume=None) -> int:
        """Deal with lost jobs, so a job never stays "running" forever (a SIGKILLed worker, or
        a filesystem broker that does not redeliver the message): a conversation import is
        queued again to resume (Job.resumable; `resume(job)` sends its task once the
        transaction commits: tasks.reap_lost_jobs passes it, models never import tasks), any
        other job is marked failed and what it left half-written is removed. One query when
        nothing is lost; returns how many jobs were reaped."""
        reaped = 0
        for job in self.lost(older_than).only("pk", "kind", "study_id", "params", "started_at"):
            # conditional UPDATE: two pages reaping at once resume, or fail (and clean up), a
            # job once
            running = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING)
            if job.resumable:
                if running.update(status=JobStatus.QUEUED, message=RESUMED_MESSAGE):
                    if resume is not None:
                        transaction.on_commit(lambda job=job: resume(job))
                    reaped += 1
                continue
            error = LOST_IMPORT_ERROR if job.is_conversation_import else LOST_JOB_ERROR
            if running.update(status=JobStatus.FAILED, error=error, finished_at=timezone.now()):
                job.discard_partial_output()
                reaped += 1
        return reaped


class Job(models.Model):
    """A background task with status, progress, a result file and an error message."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=20, choices=JobKind.choices)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    progress = models.PositiveBigIntegerField(default=0)
    total = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    # summary counts (conversations, turns, rejected) and the first rejected records
    result = models.JSONField(default=dict, blank=True)
    result_file = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # the worker's last sign of life while running (JobQuerySet.reap_lost)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if self.status == JobStatus.DONE:
            return 100
        return int(100 * self.progress / self.total) if self.total else 0

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    @property
    def waiting_for_worker(self) -> bool:
        """Queued for longer than a worker takes to pick a job up: say so (doccano's lesson)."""
        if self.status != JobStatus.QUEUED:
            return False
        age = (timezone.now() - self.created_at).total_seconds()
        return age > settings.JOB_WAITING_WARNING_SECONDS

    def start(self, total: int = 0) -> None:
        self.status, self.started_at, self.total = JobStatus.RUNNING, timezone.now(), total
        self.heartbeat_at = self.started_at
        self.save(update_fields=["status", "started_at", "total", "heartbeat_at"])

    def set_progress(self, progress: int, message: str = "", total: int | None = None) -> None:
        self.progress, self.heartbeat_at = progress, timezone.now()
        fields = {"progress": progress, "message": message, "heartbeat_at": self.heartbeat_at}
        if total is not None:
            self.total = fields["total"] = total
        Job.objects.filter(pk=self.pk).update(**fields)

    def beat(self) -> None:
        """A sign of life from the worker, between progress updates."""
        self.heartbeat_at = timezone.now()
        Job.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(
            heartbeat_at=self.heartbeat_at
        )

    @property
    def export_dir(self) -> Path:
        """Where an export job writes its file (relative paths in result_file start here)."""
        return Path(settings.MEDIA_ROOT) / "exports" / str(self.pk)

    def discard_partial_output(self) -> None:
        """Remove what a job stopped midway left behind: an export's temporary *.part file,
        the conversations an import had committed batch by batch."""
        if self.kind == JobKind.EXPORT and self.export_dir.is_dir():
            for path in self.export_dir.iterdir():
                if path.name.endswith(".part"):
                    path.unlink(missing_ok=True)
        elif self.kind == JobKind.IMPORT:
            self.remove_partial_import()

    @property
    def is_conversation_import(self) -> bool:
        return self.kind == JobKind.IMPORT and self.params.get("what") not in (
            LABEL_IMPORT,
            FILTER_DRY_RUN,
        )

    @property
    def resumable(self) -> bool:
        """A lost conversation import is run again rather than failed: the importer commits
        batch by batch, each conversation carrying its job, and a re-run skips by
        fingerprint what is there, so it continues where the lost worker stopped. So is a
        lost splitting job (intake/split_run.py keeps its place; the call cache answers what
        it asked). Not forever: a job that kills its worker every time fails after
        MAX_IMPORT_RUNS."""
        again = self.is_conversation_import or self.kind == JobKind.SPLIT
        return again and self.params.get("runs", 0) < MAX_IMPORT_RUNS

    def claim_run(self) -> bool:
        """Take this job for a run, counting runs in params["runs"]: a conditional UPDATE on
        the status and heartbeat read, so of two deliveries of one message (or a redelivery
        while a live worker still beats), one runs the job. False: someone else has it."""
        params = {**self.params, "runs": self.params.get("runs", 0) + 1}
        now = timezone.now()
        claimed = Job.objects.filter(
            pk=self.pk, status=self.status, heartbeat_at=self.heartbeat_at
        ).update(status=JobStatus.RUNNING, heartbeat_at=now, params=params)
        if claimed:
            self.status, self.heartbeat_at, self.params = JobStatus.RUNNING, now, params
        return bool(claimed)

    def remove_partial_import(self) -> int:
        """Roll back what this job wrote: exactly its conversations (Conversation.import_job),
        in chunks so a large partial import never sits in memory. A job that is not done is
        invisible (ConversationQuerySet.visible), so nothing of it can have been assigned or
        labelled. Called when an import fails or is given up as lost."""
        written = Conversation.objects.filter(import_job=self)
        removed = 0
        while chunk := list(written.values_list("pk", flat=True)[:DELETE_CHUNK]):
            _, per_model = Conversation.objects.filter(pk__in=chunk).delete()
            removed += per_model.get("annotation.Conversation", 0)
        return removed

    def finish(self, result: dict | None = None, result_file: str = "") -> None:
        self.status, self.finished_at = JobStatus.DONE, timezone.now()
        self.result = result or {}
        self.result_file = result_file
        self.progress = self.total
        self.save(update_fields=["status", "finished_at", "result", "result_file", "progress"])

    def fail(self, error: str, result: dict | None = None, result_file: str = "") -> None:
        self.status, self.finished_at, self.error = JobStatus.FAILED, timezone.now(), error
        if result is not None:
            self.result = result
        self.result_file = result_file
        self.save(update_fields=["status", "finished_at", "error", "result", "result_file"])


# -- proposals of new types ---------------------------------------------------------------


class ProposalError(ValueError):
    """A decision that cannot be made as asked; nothing was changed."""


class ProposalDecided(ProposalError):
    def __init__(self, proposal: Proposal):
        self.proposal = proposal
        super().__init__(
            f"This proposal was already {proposal.status} by {proposal.decided_by} on "
            f"{proposal.decided_at:%Y-%m-%d %H:%M} UTC: nothing was changed."
        )


class ProposalQuerySet(models.QuerySet):
    def pending(self):
        return self.filter(status=ProposalStatus.PENDING)

    def decided(self):
        return self.exclude(status=ProposalStatus.PENDING)

    def suggesting(self, user):
        """`user`'s accepted or mapped proposals whose suggested type they have not answered
        yet (by submitting labels on the card since). Pre-ticked, never stored for them."""
        return self.filter(
            proposer=user,
            status__in=[ProposalStatus.ACCEPTED, ProposalStatus.MAPPED],
            answered_at__isnull=True,
        )

    def answer(self, user, turn) -> int:
        """`user` submitted labels on `turn`: the suggestions there are answered."""
        return self.suggesting(user).filter(turn=turn).update(answered_at=timezone.now())

    def suggestions_for(self, user, turn) -> list[str]:
        """The type codes suggested to `user` on `turn`, oldest decision first."""
        rows = self.suggesting(user).filter(turn=turn).order_by("decided_at")
        return [new or mapped for new, mapped in rows.values_list("new_code", "mapped_to_code")]

    def pretick(self, user, turn, codes: set[str], types: dict[str, Type]) -> set[str]:
        """`codes` (what the form would show) plus the types suggested to `user` on `turn`;
        on a single-select axis the suggestion takes the place of the axis's type."""
        ticked = set(codes)
        for code in self.suggestions_for(user, turn):
            target = types.get(code)
            if target is None:  # a code the study's version no longer has
                continue
            if not target.axis.multi_select:
                ticked = {c for c in ticked if c in types and types[c].axis_id != target.axis_id}
            ticked.add(code)
        return ticked

    def counts(self) -> dict[str, int]:
        """{status: proposals}, every status present (0 when none)."""
        out = dict.fromkeys(ProposalStatus.values, 0)
        for status, n in self.values_list("status").annotate(n=models.Count("pk")).order_by():
            out[status] = n
        return out


class Proposal(models.Model):
    """A new type suggested on a card because none fits. The study's experts accept it (a
    new taxonomy version with the type, the card back to its annotators), map it to an
    existing type or reject it; the decision stays on the row. Accept and map suggest the type
    to the proposer (pre-ticked on the card), and never write anyone's labels."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="proposals")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="proposals")
    proposer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="proposals"
    )
    name = models.CharField(max_length=200)
    definition = models.TextField(validators=[TextLimit("definition")])
    reason = models.TextField(
        help_text="why none of the existing types fits", validators=[TextLimit("reason")]
    )
    axis = models.ForeignKey(Axis, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(
        max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="decided_proposals",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, validators=[TextLimit("reason")])
    # what the decision did, in words, for the proposer (what they may now do, or why not)
    outcome = models.TextField(blank=True)
    mapped_to_code = models.CharField(max_length=100, blank=True)
    # when the proposer submitted labels on the card after an accept or map: from then on
    # the suggested type is no longer pre-ticked for them
    answered_at = models.DateTimeField(null=True, blank=True)
    new_code = models.CharField(max_length=100, blank=True, help_text="the accepted type's code")
    created_version = models.ForeignKey(
        TaxonomyVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    new_version = models.ForeignKey(
        TaxonomyVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ProposalQuerySet.as_manager()

    class Meta:
        # the table keeps the name it had in the taxonomy app (a state-only move)
        db_table = "taxonomy_proposal"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "status"], name="taxonomy_pr_study_i_e22dd1_idx")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == ProposalStatus.PENDING

    @property
    def mapped_to_name(self) -> str:
        """The name of the type it was mapped to, for pages (codes are for files and the API)."""
        if not self.mapped_to_code:
            return ""
        found = Type.objects.filter(
            axis__version_id=self.study.taxonomy_version_id, code=self.mapped_to_code
        ).values_list("name", flat=True)
        return next(iter(found), self.mapped_to_code)

    @classmethod
    def propose(
        cls, *, study, turn, proposer, name: str, definition: str, reason: str, axis=None
    ) -> Proposal:
        version = study.taxonomy_version
        if axis is None:
            axis = version.axes.first()
        elif axis.version_id != version.pk:
            raise ProposalError(f"axis {axis.code!r} is not in {version}")
        return cls.objects.create(
            study=study,
            turn=turn,
            proposer=proposer,
            name=name,
            definition=definition,
            reason=reason,
            axis=axis,
            created_version=version,
        )

    def _lock_pending(self) -> Proposal:
        """This row, locked for the transaction; a decided one is refused. Two experts
        deciding at once: the second waits for the lock, then finds it decided."""
        # no joins here, for the reason given in accept()
        locked = Proposal.objects.select_for_update().get(pk=self.pk)
        if locked.status != ProposalStatus.PENDING:
            raise ProposalDecided(locked)
        return locked

    def _record(self, locked: Proposal, by, status: str, reason: str, **fields) -> None:
        locked.status, locked.decided_by, locked.decided_at = status, by, timezone.now()
        locked.decision_reason = reason
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save()
        self.refresh_from_db()

    def accept(self, by, *, category: str | None = None, reason: str = "") -> str:
        """A new taxonomy version with the type (in `category` of the proposal's axis, or a
        new "Proposed" one); the study switches to it and the card goes back to its
        annotators for one more round. Labels stay valid: codes are stable."""
        with transaction.atomic():
            locked = self._lock_pending()
            # one accept at a time per study: each derives from the version the last made.
            # No join in the locking query: PostgreSQL rechecks a joined row that changed
            # while we waited against the old row of the other table, and finds nothing.
            study = Study.objects.select_for_update().get(pk=locked.study_id)
            current = study.taxonomy_version
            axis_code = locked.axis.code if locked.axis else None
            if (
                category
                and not Category.objects.filter(
                    axis__version=current, axis__code=axis_code, name=category
                ).exists()
            ):
                raise ProposalError(f"no category {category!r} in {current}")
            turn = locked.turn
            new, added = current.derive(
                add=[
                    {
                        "name": locked.name,
                        "definition": locked.definition,
                        "axis": axis_code,
                        "category": category,
                        "example": turn.user_text[:300],
                    }
                ]
            )
            study.taxonomy_version = new
            study.save(update_fields=["taxonomy_version"])
            new.freeze()
            code = added[locked.name]
            outcome = f"Accepted as {code!r} in {new}."
            # the card goes back to the proposer's group (groups sharing a card run apart)
            group = turn.conversation.group_of(locked.proposer)
            state = (
                CardState.objects.select_for_update()
                .filter(turn_id=locked.turn_id, group=group)
                .first()
            )
            if state is not None:
                state.reopen()
                if state.status != CardStatus.OPEN:
                    outcome += f" The card went back to its annotators (round {state.round})."
            outcome += locked._suggestion_outcome(locked.name)
            self._record(
                locked,
                by,
                ProposalStatus.ACCEPTED,
                reason,
                new_version=new,
                new_code=code,
                outcome=outcome,
            )
        return outcome

    def map_to(self, by, code: str, *, reason: str = "") -> str:
        """An existing type covers the proposal. No decision writes an annotator's labels
        (their round-1 labels are their own judgment): the proposer is told, and while a
        round is open for them the card comes back to them with the type pre-ticked, stored
        only if they submit it (`ProposalQuerySet.suggestions_for`)."""
        with transaction.atomic():
            locked = self._lock_pending()
            version = locked.study.taxonomy_version
            types = version.types_by_code()
            if code not in types:
                raise ProposalError(f"unknown type code {code!r} in {version}")
            target = types[code]
            outcome = f"Mapped to {target.name}." + locked._suggestion_outcome(target.name)
            self._record(
                locked, by, ProposalStatus.MAPPED, reason, mapped_to_code=code, outcome=outcome
            )
        return outcome

    def _suggestion_outcome(self, type_name: str) -> str:
        """What happens next for the proposer, in words: the card back in their hands with
        the type pre-ticked, or why not."""
        who, turn = self.proposer, self.turn
        # the card's state in the proposer's group (groups sharing a card run apart)
        group = turn.conversation.group_of(who)
        if group is None or not group.annotators.filter(pk=who.pk).exists():
            return f" {who} no longer annotates this card: nothing more to do."
        state = CardState.objects.filter(turn=turn, group=group).first()
        status = state.status if state else CardStatus.OPEN
        if status in (CardStatus.OPEN, CardStatus.DISPUTED):
            return (
                f" The card is back with {who} with {type_name} pre-ticked; nothing is stored "
                f"until {who} submits."
            )
        return f" The card is {status}, so its labels stay as they are."

    def reject(self, by, *, reason: str) -> str:
        if not reason.strip():
            raise ProposalError("A reason is required to reject a proposal.")
        with transaction.atomic():
            locked = self._lock_pending()
            outcome = "Rejected."
            self._record(locked, by, ProposalStatus.REJECTED, reason.strip(), outcome=outcome)
        return outcome


class Sample(models.Model):
    """A draw that made the study's conversation set (manage.py sample, the lead's sample
    page): its parameters, seed and counts, so the methods section can say what was done."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="samples")
    population = models.PositiveIntegerField(help_text="conversations drawn from")
    n = models.PositiveIntegerField(help_text="conversations drawn")
    seed = models.BigIntegerField()
    confidence = models.FloatField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)
    proportion = models.FloatField(null=True, blank=True)
    stratify = models.JSONField(default=list, blank=True)  # e.g. ["source", "language"]
    min_turns = models.PositiveIntegerField(default=1)
    strata = models.JSONField(default=dict, blank=True)  # stratum -> {population, drawn}
    methods = models.TextField(blank=True, help_text="the methods paragraph")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.study.slug}: {self.n} of {self.population} (seed {self.seed})"


class SplitProposal(models.Model):
    """Where a conversation may change topic: before `turn_index` (2..n_turns); or, of kind
    DROP, a turn off the topics (1..n_turns) that belongs to no part. Proposed by an LLM job
    or a lead; applying them splits the conversation (annotation/intake/splitting.py). The
    applied DROP rows are the record of which turns a split left out."""

    class Status(models.TextChoices):
        OPEN = "open"
        APPLIED = "applied"
        DISMISSED = "dismissed"

    class Kind(models.TextChoices):
        SPLIT = "split", "split before this turn"
        DROP = "drop", "drop this turn (off-topic)"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="split_proposals"
    )
    turn_index = models.PositiveIntegerField()
    reason = models.TextField(blank=True)
    source = models.CharField(max_length=10, default="llm")  # "llm" or "lead"
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    kind = models.CharField(
        max_length=10, choices=Kind.choices, default=Kind.SPLIT, db_default=Kind.SPLIT
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["conversation_id", "turn_index"]

    def __str__(self) -> str:
        where = "drop turn" if self.kind == self.Kind.DROP else "before turn"
        return f"{self.conversation_id} {where} {self.turn_index} ({self.status})"


class ModelCall(models.Model):
    """One answer of a model endpoint, kept so that the same request never costs twice
    (annotation/judges/client.py): `digest` is the SHA-256 of the canonical request (endpoint,
    model, messages, temperature, seed, answer schema, ...). Only answers that passed the
    schema are kept. Not a study's: the same request from two studies is one call."""

    digest = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=200)
    host = models.CharField(max_length=255, blank=True)
    # how the answer's form was asked for: json_schema, json_object (the endpoint refused
    # the schema) or text (it refused both)
    mode = models.CharField(max_length=20)
    response = models.TextField()
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.model} call {self.digest[:12]}"


# --- open card sort (issue 11; annotation/opensort/ holds the work on them) ------------------
# While a study or group is in the open-sort phase its annotators tag cards with free tags of
# their own; nobody sees another's tags on a card (round 1 stays blind). The lead and the
# experts consolidate the tags on a board (BoardType: the one tag-to-type mapping); the freeze
# makes the board a taxonomy version and maps each expert's tag sets onto it as their round-1
# labels (Source.OPEN_SORT).


class FreeTag(models.Model):
    """A tag an annotator created in an open sort. `name` and `description` are the author's
    words and stay as written (provenance); the board works on `board_name`, `merged_into`
    and `board_type`."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="free_tags")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    # the board: a renamed tag shows board_name; a merged tag counts as its target (which may
    # be another author's tag); its type is the target's
    board_name = models.CharField(max_length=100, blank=True)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged"
    )
    board_type = models.ForeignKey(
        "BoardType", null=True, blank=True, on_delete=models.SET_NULL, related_name="tags"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "author", "name"], name="uniq_free_tag")
        ]

    def __str__(self) -> str:
        return self.name


class TagSet(models.Model):
    """One annotator's free tags on a card of a group in an open sort (possibly none: "no
    smell"). The annotator's own until the freeze; nobody else sees it on the card."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="tag_sets")
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="tag_sets")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    tags = models.ManyToManyField(FreeTag, blank=True, related_name="tag_sets")
    note = models.TextField(blank=True, max_length=10_000)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["turn", "group", "annotator"], name="uniq_tag_set")
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} on {self.turn_id} in group {self.group_id}"


class BoardType(models.Model):
    """A type on a study's consolidation board: a name, its category, definition and example,
    and the tags grouped under it. At the freeze it becomes `type` of the frozen version,
    which keeps the trail back to the tags and cards it came from."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="board_types")
    category = models.CharField(max_length=200, blank=True)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True, max_length=5_000)
    example = models.TextField(blank=True, max_length=5_000)
    order = models.PositiveSmallIntegerField(default=0)
    type = models.ForeignKey(
        Type, null=True, blank=True, on_delete=models.SET_NULL, related_name="board_types"
    )

    class Meta:
        ordering = ["category", "order", "id"]

    def __str__(self) -> str:
        return self.name


class BoardEvent(models.Model):
    """The board's history, one row per change (autosaved), with what undoes it: `before`
    holds the changed rows' earlier values. Undo applies `before` and marks the row undone."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="board_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=30)
    summary = models.CharField(max_length=300)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    undone = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.summary


# --- taxonomy evolution (issue 11 point 4; annotation/evolution/ does the work) ------------


class TaxonomyMove(models.Model):
    """A study moved to a new taxonomy version derived from its own: every current label and
    consensus was carried through the new version's mapping. The rows it retired
    (`retired_by`) are the old version's labels as they stood, so the old version's report
    stays computable and unchanged. `counts` says what moved (evolution.Plan.counts)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="taxonomy_moves")
    from_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT, related_name="+")
    to_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT, related_name="+")
    moved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    moved_at = models.DateTimeField(default=timezone.now)
    counts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-moved_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "from_version"], name="uniq_move_from")
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}: {self.from_version} -> {self.to_version}"


class BoardVisit(models.Model):
    """The first time someone saw a study's consolidation board (or its analytics), which
    shows everyone's free tags on the cards. From then on their own tag sets are locked
    (opensort/tagging.save_tag_set): what becomes their round-1 labels at the freeze stays
    what they gave before seeing anyone else's tags."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="board_visits")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    first_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="uniq_board_visit")]

    def __str__(self) -> str:
        return f"{self.user_id} saw the board of {self.study_id} at {self.first_at}"
