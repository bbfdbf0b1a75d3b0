"""Taxonomy evolution (annotation/evolution/ does the work): a study's move to a new version
derived from its own."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from taxonomy.models import TaxonomyVersion

from .study import Study


def carried_and_retired():
    """The two fields of a row taxonomy evolution moves (an annotation, a consensus, a gold
    label): `carried_from`, the row of the old version it was carried from, and
    `retired_by`, the move that retired it (the old version's row as it stood).
    db_index=False: the rows' own partial indexes serve the old version's report.
    `carried_from, retired_by = carried_and_retired()` in the model's body keeps the fields'
    order."""
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
    return carried_from, retired_by


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
