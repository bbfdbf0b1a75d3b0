"""The lead's conversation browser (issue 9, point 7): search and filter the study's
conversations (annotation/browse.py holds the search), and open one with all its cards,
their state in each group and, once they have left round 1, their labels. Lead only
(access.lead_page: a 404 for everyone else, as on every lead page); a lead who also labels
a card sees nobody else's labels on it while it is blind for them (access.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from ..access import JobResults, lead_page
from ..browse import BrowseFilter, Choices, conversation_cards, page_rows
from ..browse_pages import result_page
from ..intake.llm import off_reason
from ..intake.splitting import original_turns, why_not_split
from ..messages import text_view
from ..models import Conversation, JobKind, SetAside, SplitProposal, Study
from .shared.jobs_panel import RECENT_JOBS
from .shared.words import turns_said

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
    text = form.cleaned_data.get("q", "")
    page = result_page(form.results(study), request.GET.get("page"), PAGE_SIZE)
    rows = page_rows(list(page), text)
    ctx.update(page=page, rows=rows, query=urlencode(form.query_string()), llm_off=off_reason())
    return render(request, "annotation/lead/browse.html", ctx)


@lead_page
@require_GET
def conversation(request: HttpRequest, study: Study, conversation_id: int) -> HttpResponse:
    conversation = get_object_or_404(
        Conversation.objects.visible().select_related("split_from"),
        pk=conversation_id,
        study=study,
    )
    ctx = {
        "study": study,
        "conversation": conversation,
        "cards": conversation_cards(request.user, study, conversation),
        **split_context(study, conversation, request.user),
        **text_view("lead_conversation_text", study.slug, conversation.pk),
    }
    return render(request, "annotation/lead/conversation.html", ctx)


def split_context(study: Study, conversation: Conversation, user) -> dict:
    """The page's splitting: why it cannot be split (if so), its parts or its original, its
    split proposals (points and dropped turns), whether the LLM is configured, and the LLM
    jobs that asked about it (as `user` may see them: access.JobResults)."""
    parts = []
    if conversation.set_aside == SetAside.SPLIT:
        parts = list(conversation.split_parts.order_by("split_first_turn"))
    for part in [*parts, conversation] if conversation.split_from_id else parts:
        part.turns_said = turns_said(original_turns(part))
    # the latest LLM jobs of the study (their partials poll job_detail, which reaps lost ones)
    latest = study.jobs.filter(kind=JobKind.SPLIT).select_related("created_by")[:RECENT_JOBS]
    jobs = [job for job in latest if conversation.pk in job.params.get("conversations", [])]
    jobs = JobResults(user, study).shown(jobs)
    proposals = list(conversation.split_proposals.all())
    open_ones = [p for p in proposals if p.status == SplitProposal.Status.OPEN]
    return {
        "split_refusal": why_not_split(conversation),
        "parts": parts,
        "split_proposals": proposals,
        "open_split_points": [
            p.turn_index for p in open_ones if p.kind == SplitProposal.Kind.SPLIT
        ],
        "open_drops": [p.turn_index for p in open_ones if p.kind == SplitProposal.Kind.DROP],
        "dropped_turns": [
            p.turn_index
            for p in proposals
            if p.kind == SplitProposal.Kind.DROP and p.status == SplitProposal.Status.APPLIED
        ],
        "llm_off": off_reason(),
        "split_jobs": jobs,
    }
