"""The report page's Methods tab (/s/SLUG/report/methods/) and its downloads (Markdown, LaTeX,
JSON): the study's methods section (annotation/methods), each step's text and table as
`manage.py methods` prints them. It counts round-1 labels (the agreement job's numbers), so it
is the report's: its leads and moderators, behind the report's lock
(access.get_study_for_reporter); a split check's results follow the check study's lock."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..access import get_study_for_reporter
from ..methods import methods_of
from ..methods.render import NUMERIC, show, to_latex, to_markdown

DOWNLOADS = {
    # fmt: (content type, writer)
    "md": ("text/markdown; charset=utf-8", to_markdown),
    "tex": ("application/x-tex; charset=utf-8", to_latex),
    "json": ("application/json", lambda s: json.dumps(s, allow_nan=False, indent=1)),
}


def _page_step(step: dict) -> dict:
    """A step as the template shows it: its headers and each cell's text."""
    columns = step["columns"]
    return {
        **step,
        "headers": [{"text": c["header"], "numeric": c["kind"] in NUMERIC} for c in columns],
        "cells": [
            [
                {"text": show(c["kind"], v), "numeric": c["kind"] in NUMERIC, "null": v is None}
                for c, v in zip(columns, row, strict=True)
            ]
            for row in step["rows"]
        ],
    }


@login_required
@require_GET
def methods(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reporter(request.user, slug)
    section = methods_of(study, user=request.user)
    ctx = {
        "study": study,
        "section": section,
        "steps": [_page_step(s) for s in section["steps"]],
        "downloads": list(DOWNLOADS),
    }
    return render(request, "annotation/report/methods.html", ctx)


@login_required
@require_GET
def methods_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    study = get_study_for_reporter(request.user, slug)
    if fmt not in DOWNLOADS:
        raise Http404("No such format")
    content_type, writer = DOWNLOADS[fmt]
    response = HttpResponse(writer(methods_of(study, user=request.user)), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-methods.{fmt}"'
    return response
