"""The lead's conversation browser (issue 9, point 7): search and filter the study's
conversations (annotation/browse.py holds the search), and open one with all its cards,
their state in each group and, once they have left round 1, their labels. Lead only
(access.lead_page: a 404 for everyone else, as on every lead page); a lead who also labels
a card sees nobody else's labels on it while it is blind for them (access.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from ..access import lead_page
from ..browse import BrowseFilter, Choices, conversation_cards, page_rows
from ..models import Conversation, Study

PAGE_SIZE = 50


@lead_page
@require_GET
def browse(request: HttpRequest, study: Study) -> HttpResponse:
    groups = list(study.groups.order_by("name"))
    # always bound: no parameter at all is a valid search for everything
    form = BrowseFilter(request.GET, choices=Choices.of(study), groups=groups)
    ctx = {"study": study, "form": form, "page": None}
    if not form.is_valid():
        return render(request, "annotation/lead/browse.html", ctx, status=400)
    ids = form.conversations(study).values_list("pk", flat=True)
    page = Paginator(ids, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = page_rows(list(page), form.cleaned_data.get("q", ""))
    ctx.update(page=page, rows=rows, query=urlencode(form.query_string()))
    return render(request, "annotation/lead/browse.html", ctx)


@lead_page
@require_GET
def conversation(request: HttpRequest, study: Study, conversation_id: int) -> HttpResponse:
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    ctx = {
        "study": study,
        "conversation": conversation,
        "cards": conversation_cards(request.user, study, conversation),
    }
    return render(request, "annotation/lead/conversation.html", ctx)
