"""Category proposals: an annotator proposes a new type on a card; the study's experts
decide them in a queue (accept, map to an existing type, reject)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from taxonomy.models import Category, Type

from ..access import get_card_for_annotator, get_study_for_expert, get_study_for_user
from ..evolution import accept_preview
from ..forms import ProposalDecisionForm, ProposalForm, form_errors
from ..models import Proposal, ProposalDecided, ProposalError, Study


@login_required
@require_POST
def propose(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    types = _types(study)
    axes = list({t.axis_id: t.axis for t in types}.values())
    form = ProposalForm(request.POST, axes=axes)
    ctx = {"study": study, "turn": turn, "types": types}
    if form.is_valid():
        proposal = form.propose(study=study, turn=turn, proposer=request.user)
        if not request.htmx:
            messages.success(request, f"Proposal sent: {proposal.name}.")
            return redirect("card", slug=study.slug, turn_id=turn.pk)
        return render(
            request, "annotation/proposals/_propose.html", {**ctx, "proposal_sent": proposal}
        )
    ctx["proposal_form"] = form
    # htmx swaps a 422 in like a success (base.html's htmx-config)
    template = "_propose.html" if request.htmx else "propose.html"
    return render(request, f"annotation/proposals/{template}", ctx, status=422)


@login_required
@require_GET
def proposals(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_expert(request.user, slug)
    return render(request, "annotation/proposals/proposals.html", _queue_context(study))


@login_required
@require_POST
def proposal_decide(request: HttpRequest, slug: str, proposal_id: int) -> HttpResponse:
    study = get_study_for_expert(request.user, slug)
    proposal = get_object_or_404(Proposal, pk=proposal_id, study=study)
    form = ProposalDecisionForm(request.POST)
    error, http = "", 200
    confirm = None
    if not form.is_valid():
        error, http = form_errors(form, " "), 422
    else:
        try:
            d = form.cleaned_data
            if d["action"] == "accept" and request.POST.get("confirm") != "1":
                # a new version only after a confirmation that says what it changes
                confirm = accept_preview(proposal, d["category"] or None)
                confirm.update(category=d["category"], reason=d["reason"])
            else:
                _decide(proposal, request.user, d)
        except ProposalDecided as e:
            error, http = str(e), 409
        except ProposalError as e:
            error, http = str(e), 422
    if request.htmx:
        ctx = _queue_context(study, only=proposal.pk)
        ctx["p"].error, ctx["p"].confirm = error, confirm
        return render(request, "annotation/proposals/proposals.html#proposal", ctx, status=http)
    if not error and confirm is None:
        return redirect("proposals", slug=study.slug)
    ctx = _queue_context(study)
    for p in [*ctx["pending"], *ctx["decided"]]:
        if p.pk == proposal.pk:
            p.error, p.confirm = error, confirm
    return render(request, "annotation/proposals/proposals.html", ctx, status=http)


def _decide(proposal: Proposal, user, d: dict) -> str:
    if d["action"] == "accept":
        return proposal.accept(user, category=d["category"] or None, reason=d["reason"])
    if d["action"] == "map":
        return proposal.map_to(user, d["code"], reason=d["reason"])
    return proposal.reject(user, reason=d["reason"])


def _queue_context(study: Study, only: int | None = None) -> dict:
    """Pending proposals first (oldest first: a queue), then the 50 newest decided ones."""
    rows = study.proposals.select_related(
        "proposer", "decided_by", "axis", "turn__conversation", "new_version__taxonomy"
    )
    types = _types(study)
    categories = Category.objects.filter(axis__version_id=study.taxonomy_version_id)
    ctx = {"study": study, "types": types, "categories": categories.select_related("axis")}
    if only is not None:
        ctx["p"] = rows.get(pk=only)
        return ctx
    ctx["pending"] = list(rows.pending().order_by("created_at", "id"))
    ctx["decided"] = list(rows.decided().order_by("-decided_at", "-id")[:50])
    ctx["counts"] = study.proposals.counts()
    return ctx


def _types(study: Study) -> list[Type]:
    return study.taxonomy_version.type_list()
