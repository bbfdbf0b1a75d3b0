"""The open sort's analytics (issue 11, point 2): the partial the consolidation board loads
(tag co-occurrence, card similarity, the dendrogram) and the matrices' CSV downloads. For
the study's leads and experts who have no open-sort cards of their own left to tag
(annotation/opensort/access.may_see_board); the numbers are annotation/opensort/analytics.py's."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from ..models import Study
from ..opensort.access import get_study_for_board
from ..opensort.analytics import analyse, load_board

# the downloads: name in the URL -> the link's text. cooccurrence: cards on which both tags
# were used; similarity: experts who put both cards under one type; similarity-share: the
# same as a share of the experts who sorted both cards
MATRICES = {
    "cooccurrence": "tag co-occurrence",
    "similarity": "card similarity (experts)",
    "similarity-share": "card similarity (share of experts)",
}


def analytics_context(study: Study) -> dict:
    """What templates/annotation/opensort/_analytics.html needs, for a study whose board the
    user may see (the caller checks: opensort.access.get_study_for_board)."""
    result = analyse(load_board(study))
    return {
        "study": study,
        "a": result,
        "cooc": result.cooc_table(),
        "cooc_pairs": result.cooc_pairs(),
        "sim": result.sim_table(),
        "sim_pairs": result.sim_pairs(),
        # drawn by opensort.dendrogram.dendrogram_svg, which escapes every text
        "dendrogram": mark_safe(result.dendrogram()) if result.typed else "",
        "matrices": MATRICES,
    }


@login_required
@require_GET
def board_analytics(request: HttpRequest, slug: str) -> HttpResponse:
    """The analytics partial for htmx (the board loads it), the page around it otherwise."""
    study = get_study_for_board(request.user, slug)
    page = "_analytics.html" if request.htmx else "analytics.html"
    return render(request, f"annotation/opensort/{page}", analytics_context(study))


@login_required
@require_GET
def board_analytics_csv(request: HttpRequest, slug: str, matrix: str) -> HttpResponse:
    study = get_study_for_board(request.user, slug)
    if matrix not in MATRICES:
        raise Http404("No such matrix")
    result = analyse(load_board(study))
    if matrix == "cooccurrence":
        text = result.cooc_csv()
    else:
        text = result.similarity_csv("share" if matrix == "similarity-share" else "count")
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-{matrix}.csv"'
    return response
