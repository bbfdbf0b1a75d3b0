from __future__ import annotations

from django.contrib import admin

from .models import (
    Annotation,
    Assignment,
    Conversation,
    Group,
    Job,
    Membership,
    ModelCall,
    Study,
    Turn,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "taxonomy_version", "phase"]
    inlines = [MembershipInline]


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "kind", "moderator"]
    list_filter = ["study", "kind"]
    filter_horizontal = ["annotators"]


class AssignmentInline(admin.TabularInline):
    model = Assignment
    extra = 0


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["key", "external_id", "study", "source_format", "n_turns"]
    list_filter = ["study", "source_format"]
    search_fields = ["key", "external_id"]
    inlines = [AssignmentInline]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["__str__", "index", "reply_empty", "reply_missing"]
    raw_id_fields = ["conversation"]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["turn", "annotator", "round", "is_current", "source", "created_at"]
    list_filter = ["round", "is_current", "source"]
    raw_id_fields = ["turn"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["pk", "study", "kind", "status", "progress", "total", "created_at"]
    list_filter = ["kind", "status"]


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    """The cache of model calls (annotation/judges/client.py), to inspect what was asked."""

    list_display = ["digest", "model", "host", "mode", "prompt_tokens", "completion_tokens"]
    list_filter = ["model", "mode"]
    search_fields = ["digest"]
