"""Taxonomy evolution (annotation/evolution/ does the work): a study's move to a new version
derived from its own."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from taxonomy.models import TaxonomyVersion

from .study import Study


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
