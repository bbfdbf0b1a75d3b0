"""The open card sort (annotation/opensort/ does the work): free tags, tag sets, the board's
types and its events, and who has seen the board.

While a study or group is in the open-sort phase its annotators tag cards with free tags of
their own; nobody sees another's tags on a card (round 1 stays blind). The lead and the
experts consolidate the tags on a board (BoardType: the one tag-to-type mapping); the freeze
makes the board a taxonomy version and maps each expert's tag sets onto it as their round-1
labels (Source.OPEN_SORT)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from taxonomy.models import Type

from .corpus import Turn
from .study import Group, Study


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
