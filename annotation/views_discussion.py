"""Discussion rounds and moderation (being built)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse


def discussion(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    raise Http404("not built yet")
