"""Time per card: the endpoint static/js/timer.js reports active time to (an annotator of the
card only), and the lead's page of median and p90 per annotator and per type.
The rules and the statistics are annotation/timing.py's."""

from __future__ import annotations

import pandas as pd
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from ..access import get_card_for_annotator, get_study_for_user, lead_page
from ..models import Study
from ..timing import NO_SMELL, TimeRefused, add_time, parse_increment, study_tables


@login_required
@require_POST
def card_time(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """Add an increment of active time (POST field `ms`) to the user's time on the card.
    CSRF-protected like every POST: sendBeacon sends the token as a form field."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    try:
        ms = parse_increment(request.POST.get("ms"))
        total = add_time(turn, request.user, ms)
    except TimeRefused as e:
        return JsonResponse({"error": str(e), "field": e.field}, status=400)
    return JsonResponse({"added_ms": ms, "active_ms": total})


@lead_page
@require_GET
def card_times(request: HttpRequest, study: Study) -> HttpResponse:
    tables = study_tables(study, request.user)
    names = _type_names(study)
    ctx = {
        "study": study,
        "by_annotator": _rows(tables["annotator"], ["annotator"], names),
        "by_type": _rows(tables["type"], ["type"], names, order=list(names)),
        "by_annotator_type": _rows(
            tables["annotator_type"], ["annotator", "type"], names, order=list(names)
        ),
    }
    return render(request, "annotation/timing/page.html", ctx)


def _type_names(study: Study) -> dict[str, str]:
    """{code: name} in the taxonomy's order, "No smell" last; with several axes the name
    says its axis."""
    types = study.taxonomy_version.type_list()
    several_axes = len({t.axis_id for t in types}) > 1
    names = {t.code: (f"{t.axis.name}: {t.name}" if several_axes else t.name) for t in types}
    names[NO_SMELL] = "No smell"
    return names


def _rows(
    table: pd.DataFrame, by: list[str], names: dict[str, str], order: list[str] | None = None
) -> list[dict]:
    """The table's rows for the template: the `by` cells (a type by its name; a code no
    longer in the taxonomy as itself), n, and the times in seconds."""
    records = table.to_dict("records")
    if order is not None:
        rank = {code: i for i, code in enumerate(order)}
        records.sort(key=lambda r: (r.get("annotator", ""), rank.get(r["type"], len(rank))))
    return [
        {
            "keys": [names.get(r[c], r[c]) if c == "type" else r[c] for c in by],
            "n": int(r["n"]),
            "median": _seconds(r["median_ms"]),
            "p90": _seconds(r["p90_ms"]),
        }
        for r in records
    ]


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"
