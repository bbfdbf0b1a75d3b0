from __future__ import annotations

from django.contrib import admin

from .models import Axis, Category, Taxonomy, TaxonomyVersion, Type


class TypeInline(admin.TabularInline):
    model = Type
    extra = 0
    fields = ["code", "name", "hotkey", "definition", "order"]


@admin.register(Taxonomy)
class TaxonomyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name"]


@admin.register(TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "frozen", "created_at"]


@admin.register(Axis)
class AxisAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "multi_select", "max_labels"]


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "axis"]
    inlines = [TypeInline]
