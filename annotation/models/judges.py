"""Machine judges inside a study (issue 22): a run of an LLM judge or a rule-based detector
over a group's cards, and the scores it gave. A judge is a judge, never a voter: its labels
are round-1 labels of a pseudo-user per judge and version (`llm-gpt-x@3fa2c1`,
`det-code-rollback@1`) seated as the group's judge, and nothing of a run reaches an
annotator or a moderator (annotation/access.py); leads read them on the report.

The scores are kept apart from the labels: a label is a score at or over the run's
threshold, so the threshold can change (and the labels be written again) without a new run."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from taxonomy.models import Type

from .corpus import Turn
from .episodes import Episode
from .study import Group, Study


class JudgeUnits(models.TextChoices):
    CARDS = "cards"
    EPISODES = "episodes"


class JudgeRunStatus(models.TextChoices):
    PLANNED = "planned"  # a dry run's estimate, nothing called
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"  # its budget (calls, tokens) ran out; resumable
    FAILED = "failed"


class JudgeRun(models.Model):
    """One run of a judge: what produced its labels (judge, version, model, prompt and its
    digest, parameters), how far it went (counts, calls, tokens) and when."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_runs")
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_runs"
    )
    # the judge's registered name ("llm-annotate", "code-rollback") and its version (a
    # detector's own, or an LLM judge's prompt-and-parameters digest prefix)
    judge = models.CharField(max_length=100)
    version = models.CharField(max_length=40)
    # the pseudo-user whose labels are this run's
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    units = models.CharField(max_length=10, choices=JudgeUnits.choices, default=JudgeUnits.CARDS)
    model = models.CharField(max_length=200, blank=True)
    prompt_text = models.TextField(blank=True)
    prompt_digest = models.CharField(max_length=64, blank=True)
    # temperature, seed, sample, max_calls, max_tokens, conversations file digest ...
    params = models.JSONField(default=dict, blank=True)
    # a label is a score at or over it
    threshold = models.FloatField(default=0.5)
    status = models.CharField(
        max_length=10, choices=JudgeRunStatus.choices, default=JudgeRunStatus.PLANNED
    )
    job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_runs"
    )
    # units_total, units_done, labelled, not_applicable, quotes_dropped, errors ...
    counts = models.JSONField(default=dict, blank=True)
    calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "judge", "version"], name="judgerun_judge")]

    def __str__(self) -> str:
        return f"{self.judge}@{self.version} on {self.study_id}"

    @property
    def unit_word(self) -> str:
        """What the run goes through: sessions (llm-extract), episodes or cards."""
        if self.judge == "llm-extract":
            return "sessions"
        return "episodes" if self.units == JudgeUnits.EPISODES else "cards"


class JudgeScore(models.Model):
    """The score a run gave one type on one card or one episode (exactly one of `turn` and
    `episode`), with the evidence it gave (turns, quotes, detail). A judge that does not
    apply to a card writes nothing for it. An `llm-validate` verdict on an episode is a row
    without a type: score 1 valid, 0 invalid, its reason and rationale in the evidence."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="scores")
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    episode = models.ForeignKey(
        Episode, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    type = models.ForeignKey(
        Type, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    score = models.FloatField()
    # {"turns": [indexes], "quotes": [...], "detail": "..."}
    evidence = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "turn", "type"], name="uniq_judge_score"),
            models.UniqueConstraint(
                fields=["run", "episode", "type"], name="uniq_judge_episode_score"
            ),
            models.CheckConstraint(
                condition=Q(turn__isnull=True, episode__isnull=False)
                | Q(turn__isnull=False, episode__isnull=True),
                name="judge_score_one_unit",
            ),
        ]

    def __str__(self) -> str:
        unit = f"episode {self.episode_id}" if self.episode_id else self.turn_id
        return f"{self.run_id}: {unit} {self.type_id} {self.score:.3f}"
