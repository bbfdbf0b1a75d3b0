"""The lead's agreement and export jobs, under /s/<slug>/jobs/."""

from __future__ import annotations

from django.urls import path

from . import views_jobs

urlpatterns = [
    path("s/<slug:slug>/jobs/agreement/", views_jobs.start_agreement, name="job_agreement"),
    path("s/<slug:slug>/jobs/export/", views_jobs.start_export, name="job_export"),
    path("s/<slug:slug>/jobs/<int:job_id>/", views_jobs.job_detail, name="job_detail"),
    path(
        "s/<slug:slug>/jobs/<int:job_id>/download/",
        views_jobs.job_download,
        name="job_download",
    ),
]
