"""The lead's splitting of conversations (issue 10, point 3; issue 20, point 3). From the
conversation page (views/browse.py `conversation`): "Split before turn N" (and dropped
turns) shows the parts for confirmation, then splits; undo; ask the LLM about it (a SPLIT
job); dismiss a proposal (applying is the same confirmation as a split by hand). The
Splitting page asks about the whole study with the parameters of `manage.py
split_conversations` and applies every open proposal in one job (intake/split_run.py).
Every action is a POST for a lead only (access.lead_post: 403 "Leads only" for a member,
404 for anyone else); a refusal comes back as a message naming what and why, with nothing
changed."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from ..access import lead_page, lead_post
from ..forms import SplitForm, form_errors
from ..intake.llm import SYSTEM_PROMPT, off_reason
from ..intake.split_run import APPLY, SplitParams, study_counts
from ..intake.splitting import PartPlan, SplitRefused, part_id, plan, split, unsplit, why_not_split
from ..jobs import enqueue
from ..models import Conversation, JobKind, SplitProposal, Study
from ..tasks import run_split_proposals
from .shared.jobs_panel import recent_jobs
from .shared.words import turns_said

PAGE = "annotation/lead/splitting.html"


def _back(conversation: Conversation) -> HttpResponse:
    return redirect("lead_conversation", conversation.study.slug, conversation.pk)


def describe_parts(name: str, parts: list[PartPlan]) -> list[dict]:
    """What each part gets, as the confirmation and the messages say it."""
    out = []
    for k, part in enumerate(parts, 1):
        dropped = f" (left out: {turns_said(part.dropped)})" if part.dropped else ""
        out.append(
            {
                "k": k,
                "external_id": part_id(name, k),
                "first": part.turns[0],
                "turns": turns_said(part.turns) + dropped,
            }
        )
    return out


@lead_post
def split_conversation(request: HttpRequest, study: Study, conversation_id: int) -> HttpResponse:
    """POST before=N and drop=K (one or more each): without confirm=1, the confirmation
    page naming the turns each part gets; with it, the split."""
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    points, drops = request.POST.getlist("before"), request.POST.getlist("drop")
    try:
        if why := why_not_split(conversation):
            raise SplitRefused(why)
        planned = plan(conversation.n_turns, points, drops)
        if request.POST.get("confirm") == "1":
            parts = split(conversation, points, by=request.user, drop_turns=drops)
    except SplitRefused as exc:
        messages.error(request, str(exc))
        return _back(conversation)
    parts_said = describe_parts(conversation.key, planned)
    if request.POST.get("confirm") != "1":
        return _confirmation(request, study, conversation, parts_said, points, drops)
    said = "; ".join(f"{p['external_id']}: {p['turns']}" for p in parts_said)
    messages.success(request, f"Split {conversation.key} into {len(parts)} parts ({said}).")
    return _back(conversation)


def _confirmation(request, study, conversation, parts_said, points, drops) -> HttpResponse:
    Kind = SplitProposal.Kind
    proposals = {
        (p.kind, p.turn_index): p
        for p in conversation.split_proposals.filter(status=SplitProposal.Status.OPEN)
    }
    chosen = {int(k) for k in points}
    dropped = {int(k) for k in drops}
    ctx = {
        "study": study,
        "conversation": conversation,
        "parts": parts_said,
        "points": sorted(chosen),
        "drops": sorted(dropped),
        "choices": [
            (k, k in chosen, proposals.get((Kind.SPLIT, k)))
            for k in range(2, conversation.n_turns + 1)
        ],
        "drop_choices": [
            (k, k in dropped, proposals.get((Kind.DROP, k)))
            for k in range(1, conversation.n_turns + 1)
        ],
    }
    return render(request, "annotation/lead/split_confirm.html", ctx)


@lead_post
def unsplit_conversation(request: HttpRequest, study: Study, conversation_id: int) -> HttpResponse:
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    try:
        n = unsplit(conversation, by=request.user)
    except SplitRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Undid the split of {conversation.key}: its {n} parts are deleted and it "
            "is back in the study's set.",
        )
    return _back(conversation)


@lead_post
def dismiss_proposal(request: HttpRequest, study: Study, proposal_id: int) -> HttpResponse:
    proposal = get_object_or_404(
        SplitProposal.objects.select_related("conversation__study"),
        pk=proposal_id,
        conversation__study=study,
    )
    if proposal.status != SplitProposal.Status.OPEN:
        messages.error(request, f"This proposal is already {proposal.status}.")
    else:
        proposal.status = SplitProposal.Status.DISMISSED
        proposal.save(update_fields=["status"])
        where = "drop of turn" if proposal.kind == SplitProposal.Kind.DROP else "split before turn"
        messages.success(request, f"Dismissed the {where} {proposal.turn_index}.")
    return _back(proposal.conversation)


@lead_post
def ask_llm(request: HttpRequest, study: Study) -> HttpResponse:
    """POST conversation=ID (one or more): a SPLIT job asking the configured LLM for their
    split points. Back to the conversation page (one) or the browser (several)."""
    raw = request.POST.getlist("conversation")
    ids = [int(x) for x in raw if x.isdigit()]
    chosen = list(
        Conversation.objects.visible()
        .filter(study=study, pk__in=ids)
        .order_by("id")
        .values_list("pk", flat=True)
    )
    back = (
        redirect("lead_conversation", study.slug, chosen[0])
        if len(chosen) == 1
        else redirect("lead_browse", study.slug)
    )
    if why := off_reason():
        messages.error(request, why)
        return back
    if not chosen:
        messages.error(request, "Choose the conversations to send to the LLM.")
        return back
    params = {"conversations": chosen}
    job = enqueue(request.user, study, JobKind.SPLIT, params, run_split_proposals)
    messages.success(
        request,
        f"Asking the LLM for split points of {len(chosen)} conversation"
        f"{'s' if len(chosen) != 1 else ''} (job #{job.pk}).",
    )
    return back


# -- the Splitting page -----------------------------------------------------------------------


def _page(request: HttpRequest, study: Study, form: SplitForm, status: int = 200) -> HttpResponse:
    ctx = {
        "study": study,
        "form": form,
        "counts": study_counts(study),
        "llm_off": off_reason(),
        "default_model": settings.CARDSORT_LLM_MODEL,
        "split_jobs": recent_jobs(study, request.user, [JobKind.SPLIT]),
    }
    return render(request, PAGE, ctx, status=status)


@lead_page
@require_GET
def splitting(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's splitting: its numbers, the form that asks the model, Apply all, jobs."""
    form = SplitForm(initial={"min_turns": 2, "temperature": 0, "prompt": SYSTEM_PROMPT})
    return _page(request, study, form)


@lead_post
def start_splitting(request: HttpRequest, study: Study) -> HttpResponse:
    """POST the form: a SPLIT job over the study (422 and the form's errors: nothing queued)."""
    form = SplitForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, f"Splitting not started: {form_errors(form)}")
        return _page(request, study, form, status=422)
    data = form.cleaned_data
    if why := off_reason(data["model"]):
        messages.error(request, why)
        return _page(request, study, form, status=422)
    params = SplitParams(
        min_turns=data["min_turns"],
        model=data["model"].strip(),
        temperature=data["temperature"],
        seed=data["seed"],
        prompt=data["prompt"],
        examples=data["examples"],
        max=data["max"],
        apply=data["apply"],
    ).check()
    job = enqueue(request.user, study, JobKind.SPLIT, params.as_params(), run_split_proposals)
    messages.success(request, f"Asking the model about the study's conversations (job #{job.pk}).")
    return redirect("lead_splitting", study.slug)


@lead_post
def apply_all(request: HttpRequest, study: Study) -> HttpResponse:
    """POST: one SPLIT job that applies every open proposal of the study."""
    n = study_counts(study)["open"]
    if not n:
        messages.error(request, "No conversation of the study's set has an open proposal.")
        return redirect("lead_splitting", study.slug)
    job = enqueue(request.user, study, JobKind.SPLIT, {"what": APPLY}, run_split_proposals)
    messages.success(
        request,
        f"Applying the open proposals of {n} conversation{'s' if n != 1 else ''} (job #{job.pk}).",
    )
    return redirect("lead_splitting", study.slug)
