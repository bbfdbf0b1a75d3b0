"""The lead's pages, all under /s/<slug>/lead/."""

from __future__ import annotations

from django.urls import path

from . import views_gold, views_lead

urlpatterns = [
    path(
        "s/<slug:slug>/lead/conversations/",
        views_lead.conversations,
        name="lead_conversations",
    ),
    path("s/<slug:slug>/lead/import/", views_lead.import_conversations, name="lead_import"),
    path(
        "s/<slug:slug>/lead/import/annotations/",
        views_lead.import_annotations,
        name="lead_import_annotations",
    ),
    path("s/<slug:slug>/lead/assign/", views_lead.assign, name="lead_assign"),
    path("s/<slug:slug>/lead/groups/", views_lead.groups, name="lead_groups"),
    path(
        "s/<slug:slug>/lead/groups/<int:group_id>/members/",
        views_lead.group_members,
        name="lead_group_members",
    ),
    path(
        "s/<slug:slug>/lead/groups/<int:group_id>/moderator/",
        views_lead.group_moderator,
        name="lead_group_moderator",
    ),
    # the study-level gold of overlap cards whose groups disagree (annotation/views_gold.py)
    path("s/<slug:slug>/lead/gold/", views_gold.gold_queue, name="lead_gold"),
    path(
        "s/<slug:slug>/lead/gold/<int:turn_id>/",
        views_gold.gold_decide,
        name="lead_gold_decide",
    ),
]
