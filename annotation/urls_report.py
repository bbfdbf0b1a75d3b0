"""The agreement report page and its downloads (annotation/views_report.py)."""

from __future__ import annotations

from django.urls import path

from . import views_report

urlpatterns = [
    path("s/<slug:slug>/report/", views_report.report, name="report"),
    path(
        "s/<slug:slug>/report/download/<str:fmt>/",
        views_report.report_download,
        name="report_download",
    ),
]
