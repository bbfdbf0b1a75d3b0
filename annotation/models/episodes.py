"""Episodes (issue 21): the agent-misalignment study's unit beside the turn. An episode is a
contiguous range of a conversation's turns in which an agent's behaviour diverged from what
the developer wanted, with an alignment goal, evidence quotes anchored to spans of the turns'
stored text, and a confidence. An extractor (a model, run by `import_episodes`) or a person
writes them; people judge them valid or invalid (with a reason) and label the valid ones on
the taxonomy's axes, and rate per session how much of its misalignment the extracted
episodes cover."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone

from taxonomy.models import TaxonomyVersion

from ..limits import TextLimit
from .corpus import Conversation, Turn
from .evolution import carried_and_retired
from .rounds import SkipKind, Source
from .study import Group, Study


class EvidencePart(models.TextChoices):
    """Which stored text of a turn a quote lies in: its user message, its reply's text, or
    one of its reply parts (Turn.reply_parts) of these kinds (annotation/episodes/parts.py)."""

    USER = "user"
    REPLY = "reply"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


class ExtractionRun(models.Model):
    """One extractor's output imported into a study (`import_episodes --run NAME`): who or
    what extracted (`source`: a model's name, or a person), with what settings, and what the
    import counted (read, imported, dropped_confidence, rejected, quotes_missing)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="extraction_runs")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=200, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="uniq_extraction_run_name")
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}: run {self.name}"


class Episode(models.Model):
    """A contiguous turn range `first_turn`..`last_turn` (1-based positions as Turn.index
    numbers them) of one conversation. Episodes may overlap. From an extraction run (`run`)
    or written by a person (`created_by`, no confidence). A validator's verdict and labels
    that came with the run's file are kept as the run's (`run_valid`, `run_invalid_reason`,
    `run_labels` {axis code: [type codes]}), never as a person's judgement."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="episodes"
    )
    run = models.ForeignKey(
        ExtractionRun, null=True, blank=True, on_delete=models.CASCADE, related_name="episodes"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="created_episodes",
    )
    first_turn = models.PositiveIntegerField()
    last_turn = models.PositiveIntegerField()
    goal = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    run_valid = models.BooleanField(null=True, blank=True)
    run_invalid_reason = models.CharField(max_length=100, blank=True, default="")
    run_labels = models.JSONField(default=dict, blank=True)
    # the line of the run's file it came from, for messages and exports
    source_line = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["conversation_id", "first_turn", "last_turn", "id"]
        indexes = [models.Index(fields=["run", "conversation"], name="episode_run_conversation")]
        constraints = [
            models.CheckConstraint(
                condition=Q(first_turn__gte=1) & Q(last_turn__gte=models.F("first_turn")),
                name="episode_turn_range",
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True)
                | (Q(confidence__gte=0.0) & Q(confidence__lte=1.0)),
                name="episode_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} turns {self.first_turn}-{self.last_turn}"

    def clean(self) -> None:
        """The range must lie within the conversation's turns."""
        if self.first_turn < 1 or self.last_turn < self.first_turn:
            raise ValidationError(
                f"turns {self.first_turn}-{self.last_turn}: not a range (first_turn >= 1, "
                "last_turn >= first_turn)"
            )
        n = self.conversation.n_turns
        if self.last_turn > n:
            raise ValidationError(
                f"last_turn: {self.last_turn} out of range (the conversation has {n} turns)"
            )
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            raise ValidationError(f"confidence: {self.confidence} is not in [0, 1]")

    @property
    def turn_range(self) -> tuple[int, int]:
        return (self.first_turn, self.last_turn)


class EvidenceQuote(models.Model):
    """A quote of an episode's evidence: characters [start, end) of the stored text of one
    part of one turn (annotation/episodes/parts.py says which text each part is); for a
    reply part, `part_index` is its position in Turn.reply_parts (0-based)."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="evidence")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    part = models.CharField(max_length=12, choices=EvidencePart.choices)
    part_index = models.PositiveSmallIntegerField(null=True, blank=True)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    quote = models.TextField()
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["episode_id", "order", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="quote_span")
        ]

    def __str__(self) -> str:
        return f"episode {self.episode_id}: {self.part} [{self.start}, {self.end})"


class EpisodeJudgement(models.Model):
    """(episode, annotator, round) in a group -> valid or not (with a reason), and, when
    valid, labels on the taxonomy's axes ({axis code: [type codes]}). As Annotation: round 1
    is an annotator's independent judgement; a revision inserts a new row and clears
    `is_current` on the old one."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="judgements")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="episode_judgements")
    round = models.PositiveSmallIntegerField(default=1)
    valid = models.BooleanField()
    invalid_reason = models.CharField(max_length=100, blank=True, default="")
    labels = models.JSONField(default=dict, blank=True)
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORT)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    # taxonomy evolution (annotation/evolution/): a moved study's judgement is retired
    # (`retired_by` the move) and carried to a new row under the new version (`carried_from`)
    carried_from, retired_by = carried_and_retired()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["episode", "annotator", "round"],
                condition=Q(is_current=True),
                name="uniq_current_episode_judgement",
            )
        ]

    def __str__(self) -> str:
        verdict = "valid" if self.valid else f"invalid ({self.invalid_reason})"
        return f"episode {self.episode_id} by {self.annotator_id} r{self.round}: {verdict}"


class CoverageRating(models.Model):
    """How much of a session's real misalignment its extracted episodes capture, as one
    annotator rates it in a group: 0 none, 1 partly, 2 fully. A new rating keeps the old
    row (is_current False)."""

    class Rating(models.IntegerChoices):
        NONE = 0, "none"
        PARTLY = 1, "partly"
        FULLY = 2, "fully"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="coverage_ratings"
    )
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="coverage_ratings")
    rating = models.PositiveSmallIntegerField(choices=Rating.choices)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.IMPORT)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "annotator", "group"],
                condition=Q(is_current=True),
                name="uniq_current_coverage",
            ),
            models.CheckConstraint(condition=Q(rating__lte=2), name="coverage_rating_range"),
        ]

    def __str__(self) -> str:
        return f"coverage {self.rating} of {self.conversation_id} by {self.annotator_id}"


class EpisodeSeen(models.Model):
    """That an annotator opened an extracted episode in a group (the session page's episode,
    or its card): the session's coverage question opens once every extracted episode of the
    session is seen or judged (actions/episodes.py). The first opening is kept."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="seen_by")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="episodes_seen")
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["episode", "annotator", "group"], name="uniq_episode_seen"
            )
        ]

    def __str__(self) -> str:
        return f"episode {self.episode_id} seen by {self.annotator_id}"


class EpisodeSkip(models.Model):
    """An annotator put an episode off, as a card (CardSkip): skipped it, or flagged it for
    later with a reason. It goes to the end of their episode queue until they judge it (a
    judgement given after the skip clears it: episodes/putoff.py); flags are listed for the
    lead with the flagged cards. One row per annotator and episode: the latest skip or flag
    replaces the one before. Not in the cards' kept queue (annotation/db/): the episode
    queue is computed (episodes/queue.py)."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="episode_skips"
    )
    kind = models.CharField(max_length=4, choices=SkipKind.choices, default=SkipKind.SKIP)
    reason = models.TextField(blank=True, validators=[TextLimit("flag")])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["annotator", "episode"], name="one_skip_per_episode")
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} {self.kind} episode {self.episode_id}"


class EpisodeTime(models.Model):
    """Active time an annotator spent on an episode's card, as CardTime on a turn's (the tab
    visible and input within the last minute), reported by the same browser clock
    (static/js/timer.js) and added by the same rule (annotation/timing.py). A table of its
    own: CardTime feeds the cards' kept figures and queue, which episodes stay out of."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="times")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="episode_times"
    )
    active_ms = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["annotator", "episode"], name="one_time_per_episode")
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} {self.active_ms} ms on episode {self.episode_id}"
