"""The lead's study-level gold: the overlap cards (shared by several groups) whose groups'
consensus labels differ, each group's consensus and rationale side by side, and the lead's
decision with a rationale (StudyGold, append-only, with the provenance of a consensus).
Where the groups agree the study gold is their set (`groups_agree`) and needs no decision."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..access import get_study_for_lead
from ..forms import ConsensusForm, form_errors
from ..models import AlreadyDecidedGold, StudyGold, Turn

PAGE_SIZE = 20


@login_required
@require_GET
def gold_queue(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_lead(request.user, slug, say_why=True)
    cards = StudyGold.disputed_cards(study)
    page = Paginator(cards, PAGE_SIZE).get_page(request.GET.get("page"))
    ctx = {"study": study, "page": page, "types": study.taxonomy_version.type_list()}
    ctx.update(checked=set(), no_smell=False, hotkeys=False)
    return render(request, "annotation/gold/queue.html", ctx)


@login_required
@require_POST
def gold_decide(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The lead's study-level gold of one overlap card; a second decision changes nothing."""
    study = get_study_for_lead(request.user, slug, say_why=True)
    turn = get_object_or_404(Turn, pk=turn_id, conversation__study=study)
    form = ConsensusForm(request.POST, types=study.taxonomy_version.type_list())
    if not any(t.pk == turn.pk for t, _ in StudyGold.disputed_cards(study)) and not (
        StudyGold.objects.current().filter(turn=turn).exists()
    ):
        messages.error(request, f"{turn}: its groups have not all decided, or they agree.")
    elif not form.is_valid():
        errors = form_errors(form)
        messages.error(request, f"{turn}: nothing decided: {errors}")
    else:
        d = form.cleaned_data
        try:
            StudyGold.decide(turn, request.user, d["chosen_types"], d["rationale"])
            messages.success(request, f"{turn}: study-level gold decided.")
        except AlreadyDecidedGold as e:
            messages.error(request, str(e))
    return redirect("lead_gold", study.slug)
