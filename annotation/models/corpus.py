"""The corpus: conversations and their turns (the cards), samples drawn from them, split
proposals and the cache of model calls made on them."""

from __future__ import annotations

import random

from django.conf import settings
from django.db import models
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..conversation_keys import MAX_LENGTH as KEY_MAX_LENGTH
from ..conversation_keys import give_keys
from .study import Group, Study, Unit, check_groups_can_share


class SetAside(models.TextChoices):
    """Why a conversation is not in the study's set (it stays, as population or provenance)."""

    NO = "", "in the set"
    SAMPLE = "sample", "not drawn by the sample"
    SPLIT = "split", "split into single-topic conversations"
    FILTERED = "filtered", "dropped by the coding filter"


def _unfinished_imports():
    from .jobs import Job, JobKind, JobStatus

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

    def under_way(self):
        """The conversations of an import not done yet: those `visible` leaves out."""
        return self.filter(import_job__in=_unfinished_imports())

    def unassigned(self):
        """Conversations of the set that no group has yet (a set-aside one is never offered
        for assignment)."""
        return self.in_set().filter(assignments__isnull=True)

    def assign(self, group: Group) -> int:
        """Assign every conversation of this queryset to `group` as well (all its turns with
        it); a conversation may belong to several groups, each running its own rounds on it.
        Returns how many were newly assigned. Raises SeatConflict when a person would sit in
        two groups sharing a conversation."""
        from .rounds import Assignment

        new = self.exclude(assignments__group=group)
        others = Group.objects.filter(assignments__conversation__in=new).exclude(pk=group.pk)
        for other in others.distinct():
            check_groups_can_share(group, other)
        ids = list(new.values_list("pk", flat=True))
        Assignment.objects.bulk_create(
            [Assignment(conversation_id=pk, group=group) for pk in ids], ignore_conflicts=True
        )
        if ids:  # the group's annotators hold these cards now, in conversation order
            from .queue import rebuild_groups

            rebuild_groups([group.pk])
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
        indexes = [
            models.Index(fields=["study", "fingerprint"], name="conv_study_fingerprint"),
            # a study's split-check studies, found by their conversations' source (intake/
            # splitcheck: the format "split_check", the file "study <slug>"): a few rows of
            # the table, not a scan of it (issue 25)
            models.Index(
                fields=["source_file"],
                condition=models.Q(source_format="split_check"),
                name="conv_split_check_source",
            ),
        ]
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


class TurnQuerySet(models.QuerySet):
    def visible(self):
        """The turns of visible conversations (ConversationQuerySet.visible)."""
        return self.exclude(conversation__import_job__in=_unfinished_imports())

    def for_annotator(self, study: Study, user):
        """The cards `user` annotates in `study`: every turn of the conversations of their
        groups that label turns (a group judging episodes has no cards: issue 21)."""
        # one row per turn: an annotator sits in one group only of those sharing a
        # conversation (Group.check_seat)
        # (through the group's annotators, not `group_id IN (my groups)`: SQLite then walked
        # the study's every turn, 64 ms instead of 5 for the next card of 5,554)
        return self.filter(
            conversation__study=study,
            conversation__assignments__group__annotators=user,
            conversation__assignments__group__unit=Unit.TURN,
        ).order_by("conversation_id", "index")

    def annotated_by(self, user, round: int = 1):
        """Annotate `done`: `user` has labelled the card in `round`; in round 1 a tag set of
        the open sort counts too (annotation/opensort/tagging.py)."""
        from .opensort import TagSet
        from .rounds import Annotation

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
        from .rounds import CardSkip

        skips = CardSkip.objects.filter(turn=OuterRef("pk"), annotator=user)
        return self.annotate(put_off_at=Subquery(skips.values("created_at")[:1]))

    def next_for(self, user, turn: Turn | None = None) -> int | None:
        """The id of `user`'s next card to label: the first not yet labelled after `turn`,
        else from the start; the cards they skipped or flagged come last, oldest put off
        first (so a card just skipped is the very last). The rule written out in the ORM: the
        pages seek it on the kept queue (models/queue.next_card), and
        tests/properties/test_queue_kept.py holds the two together."""
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
        from .rounds import CardState, CardStatus

        states = CardState.objects.filter(turn=OuterRef("pk"), group__annotators=user)
        status = Subquery(states.values("status")[:1])
        return self.annotate(status=Coalesce(status, models.Value(CardStatus.OPEN)))

    def after(self, turn: Turn):
        c, i = turn.conversation_id, turn.index
        return self.filter(Q(conversation_id__gt=c) | Q(conversation_id=c, index__gt=i))

    def bulk_create(self, objs, *args, **kwargs):
        """As QuerySet.bulk_create; turns written to a conversation already assigned are
        cards of its groups' annotators from now on (models/queue.py keeps their places)."""
        made = super().bulk_create(objs, *args, **kwargs)
        _turns_written({t.conversation_id for t in made})
        return made


def _turns_written(conversation_ids: set[int]) -> None:
    from .queue import rebuild_conversations

    if conversation_ids:
        rebuild_conversations(conversation_ids)


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

    def save(self, *args, **kwargs):
        adding = self._state.adding
        super().save(*args, **kwargs)
        if adding:
            _turns_written({self.conversation_id})


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
    job = models.ForeignKey("Job", null=True, blank=True, on_delete=models.SET_NULL)
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
