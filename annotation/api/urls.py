from __future__ import annotations

from django.urls import path

from . import views as api

urlpatterns = [
    path("studies/", api.studies, name="api-studies"),
    path("studies/<slug:slug>/taxonomy/", api.taxonomy, name="api-taxonomy"),
    path("studies/<slug:slug>/cards/", api.cards, name="api-cards"),
    path("studies/<slug:slug>/cards/<int:turn_id>/", api.card, name="api-card"),
    path(
        "studies/<slug:slug>/cards/<int:turn_id>/annotation/",
        api.annotate,
        name="api-annotate",
    ),
    path("studies/<slug:slug>/annotations/", api.annotations, name="api-annotations"),
    path(
        "studies/<slug:slug>/annotations/import/",
        api.import_annotations,
        name="api-annotations-import",
    ),
    path("studies/<slug:slug>/jobs/<int:job_id>/", api.job, name="api-job"),
    path("studies/<slug:slug>/agreement/", api.agreement, name="api-agreement"),
]
