"""Taxonomy -> version -> axis -> category -> type. A version is frozen once used; a change
makes a new version with a mapping from the old codes (issue 3 builds the migration)."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import models, transaction

PRESET_DIR = Path(__file__).resolve().parent / "presets"


class Taxonomy(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def load_preset(cls, slug: str) -> TaxonomyVersion:
        """Return version 1 of a preset taxonomy, creating it from its data file once."""
        existing = TaxonomyVersion.objects.filter(taxonomy__slug=slug, number=1).first()
        if existing:
            return existing
        path = PRESET_DIR / f"{slug}.json"
        if not path.exists():
            known = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.json")))
            raise ValueError(f"unknown taxonomy preset {slug!r} (known: {known})")
        return cls.create_from_data(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    @transaction.atomic
    def create_from_data(cls, data: dict) -> TaxonomyVersion:
        taxonomy = cls.objects.create(
            slug=data["slug"],
            name=data["name"],
            description=data.get("description", ""),
            source=data.get("source", ""),
        )
        version = TaxonomyVersion.objects.create(taxonomy=taxonomy, number=1)
        for a_order, axis_data in enumerate(data["axes"]):
            axis = Axis.objects.create(
                version=version,
                code=axis_data["code"],
                name=axis_data["name"],
                multi_select=axis_data.get("multi_select", True),
                max_labels=axis_data.get("max_labels"),
                order=a_order,
            )
            for c_order, cat_data in enumerate(axis_data["categories"]):
                category = Category.objects.create(axis=axis, name=cat_data["name"], order=c_order)
                for t_order, type_data in enumerate(cat_data["types"]):
                    Type.objects.create(
                        category=category,
                        axis=axis,
                        code=type_data["code"],
                        name=type_data["name"],
                        definition=type_data.get("definition", ""),
                        example=type_data.get("example", ""),
                        hotkey=type_data.get("hotkey", ""),
                        reported_share=type_data.get("share"),
                        order=t_order,
                    )
        return version


class TaxonomyVersion(models.Model):
    taxonomy = models.ForeignKey(Taxonomy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    frozen = models.BooleanField(default=False)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT)
    # old type code -> new type code (or null when dropped on purpose); see DESIGN.md
    mapping = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "number"], name="uniq_taxonomy_version")
        ]

    def __str__(self) -> str:
        return f"{self.taxonomy.slug} v{self.number}"

    def freeze(self) -> None:
        if not self.frozen:
            TaxonomyVersion.objects.filter(pk=self.pk).update(frozen=True)
            self.frozen = True

    def types_by_code(self) -> dict[str, Type]:
        return {t.code: t for t in Type.objects.filter(axis__version=self).select_related("axis")}


class Axis(models.Model):
    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="axes")
    code = models.SlugField()
    name = models.CharField(max_length=200)
    multi_select = models.BooleanField(default=True)
    max_labels = models.PositiveSmallIntegerField(null=True, blank=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        constraints = [models.UniqueConstraint(fields=["version", "code"], name="uniq_axis_code")]

    def __str__(self) -> str:
        return self.name


class Category(models.Model):
    axis = models.ForeignKey(Axis, on_delete=models.CASCADE, related_name="categories")
    name = models.CharField(max_length=200)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return self.name


class Type(models.Model):
    """A leaf of the taxonomy: what an annotator picks. `code` is stable across versions."""

    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="types")
    axis = models.ForeignKey(Axis, on_delete=models.CASCADE, related_name="types")
    code = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    example = models.TextField(blank=True)
    hotkey = models.CharField(max_length=1, blank=True)
    reported_share = models.CharField(max_length=20, blank=True, null=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["axis__order", "category__order", "order", "id"]
        constraints = [models.UniqueConstraint(fields=["axis", "code"], name="uniq_type_code")]

    def __str__(self) -> str:
        return self.code

    def save(self, *args, **kwargs) -> None:
        if self.axis_id is None and self.category_id is not None:
            self.axis_id = self.category.axis_id
        super().save(*args, **kwargs)
