"""Studies, conversations, turns (cards), groups, annotations and jobs. DESIGN.md fixes the
words; one word per idea."""

from __future__ import annotations

import random

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from taxonomy.models import TaxonomyVersion, Type


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


class Study(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    phase = models.CharField(max_length=20, choices=Phase.choices, default=Phase.CLOSED_SORT)
    discussion_rounds = models.PositiveSmallIntegerField(default=1)
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
        m = self.memberships.filter(user=user).only("role").first()
        return m.role if m else None

    def add_member(self, user, role: str = Role.ANNOTATOR, kind: str = Kind.STUDENT):
        membership, created = Membership.objects.get_or_create(
            study=self, user=user, defaults={"role": role, "kind": kind}
        )
        return membership


class Membership(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.STUDENT)

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

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="uniq_group_name")]

    def __str__(self) -> str:
        return self.name


class ConversationQuerySet(models.QuerySet):
    def unassigned(self):
        return self.filter(group__isnull=True)

    def assign(self, group: Group) -> int:
        """Assign every conversation of this queryset to `group` (all its turns with it)."""
        return self.update(group=group)

    def sample(self, n: int, seed: int) -> ConversationQuerySet:
        """`n` of these conversations drawn at random; the same seed over the same rows draws
        the same ones, so an assignment can be repeated and reported."""
        ids = list(self.order_by("id").values_list("id", flat=True))
        if n > len(ids):
            raise ValueError(f"asked for {n} conversations, only {len(ids)} available")
        return self.filter(pk__in=random.Random(seed).sample(ids, n))


class Conversation(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="conversations")
    # The dataset's own id. Not unique in general: WildChat's conversation_hash repeats.
    external_id = models.CharField(max_length=255, db_index=True)
    source_format = models.CharField(max_length=30)
    source_file = models.CharField(max_length=500, blank=True)
    source_line = models.PositiveIntegerField(null=True, blank=True)
    system_prompt = models.TextField(blank=True)
    preamble = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    n_turns = models.PositiveIntegerField(default=0)
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversations"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["study", "group"])]

    def __str__(self) -> str:
        return self.external_id


class TurnQuerySet(models.QuerySet):
    def for_annotator(self, study: Study, user):
        """The cards `user` annotates in `study`: every turn of their groups' conversations."""
        return self.filter(
            conversation__study=study, conversation__group__annotators=user
        ).order_by("conversation_id", "index")

    def annotated_by(self, user, round: int = 1):
        mine = Annotation.objects.filter(
            turn=OuterRef("pk"), annotator=user, round=round, is_current=True
        )
        return self.annotate(done=Exists(mine))

    def todo(self, user, round: int = 1):
        """The cards of this queryset that `user` has not labelled yet in `round`."""
        return self.annotated_by(user, round).filter(done=False)

    def after(self, turn: Turn):
        c, i = turn.conversation_id, turn.index
        return self.filter(Q(conversation_id__gt=c) | Q(conversation_id=c, index__gt=i))

    def before(self, turn: Turn):
        c, i = turn.conversation_id, turn.index
        return self.filter(Q(conversation_id__lt=c) | Q(conversation_id=c, index__lt=i))

    def progress(self, user, round: int = 1) -> tuple[int, int]:
        """(cards `user` has labelled in `round`, cards in this queryset): two counts."""
        done = Annotation.objects.filter(
            turn__in=self.values("pk"), annotator=user, round=round, is_current=True
        ).count()
        return done, self.count()


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
        return f"{self.conversation.external_id}#{self.index}"

    def round1_closed(self, group: Group) -> bool:
        """Round 1 ends for a card once every annotator of its group has submitted."""
        annotators = group.annotators.all()
        submitted = Annotation.objects.filter(
            turn=self, round=1, is_current=True, annotator__in=annotators
        ).count()
        return submitted >= len(annotators) > 0


class Source(models.TextChoices):
    BROWSER = "browser"
    IMPORT = "import"
    API = "api"


class AnnotationQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class Annotation(models.Model):
    """(turn, annotator, round) -> a set of types. An empty set is "no smell"; no row at all
    is "not yet annotated". Never overwritten: a revision inserts a new row and clears
    `is_current` on the old one, so the history stays."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    round = models.PositiveSmallIntegerField(default=1)
    types = models.ManyToManyField(Type, blank=True, related_name="annotations")
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    note = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.BROWSER)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

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
        indexes = [models.Index(fields=["annotator", "round", "is_current"])]

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
    ) -> Annotation:
        """Save a new revision of (turn, annotator, round); the previous one stays as
        history. Two concurrent saves both land, one after the other, and neither is lost."""
        version = taxonomy_version or turn.conversation.study.taxonomy_version
        for attempt in range(3):
            try:
                with transaction.atomic():
                    cls.objects.filter(
                        turn=turn, annotator=annotator, round=round, is_current=True
                    ).update(is_current=False)
                    annotation = cls.objects.create(
                        turn=turn,
                        annotator=annotator,
                        round=round,
                        taxonomy_version=version,
                        note=note,
                        evidence=evidence,
                        confidence=confidence,
                        source=source,
                    )
                    annotation.types.set(types)
                return annotation
            except IntegrityError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class JobKind(models.TextChoices):
    IMPORT = "import"
    AGREEMENT = "agreement"
    EXPORT = "export"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


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
        self.save(update_fields=["status", "started_at", "total"])

    def set_progress(self, progress: int, message: str = "") -> None:
        self.progress = progress
        Job.objects.filter(pk=self.pk).update(progress=progress, message=message)

    def finish(self, result: dict | None = None, result_file: str = "") -> None:
        self.status, self.finished_at = JobStatus.DONE, timezone.now()
        self.result = result or {}
        self.result_file = result_file
        self.progress = self.total
        self.save(update_fields=["status", "finished_at", "result", "result_file", "progress"])

    def fail(self, error: str, result: dict | None = None) -> None:
        self.status, self.finished_at, self.error = JobStatus.FAILED, timezone.now(), error
        if result is not None:
            self.result = result
        self.save(update_fields=["status", "finished_at", "error", "result"])
