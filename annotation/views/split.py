"""The lead's splitting of conversations (issue 10, point 3), from the conversation page
(views/browse.py `conversation`): "Split before turn N" shows the parts for confirmation,
then splits; undo; ask an LLM for split points (a SPLIT job); dismiss a proposal (applying
one is the same confirmation as a split by hand). Every action is a POST for a lead only
(access.lead_post: 403 "Leads only" for a member, 404 for anyone else); a refusal comes
back as a message naming what and why, with nothing changed."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from ..access import lead_post
from ..intake.llm import off_reason
from ..intake.splitting import SplitRefused, part_id, part_ranges, split, unsplit, why_not_split
from ..jobs import enqueue
from ..models import Conversation, JobKind, SplitProposal, Study
from ..tasks import run_split_proposals

# conversations one request may send to the LLM job (a page of the browser holds 50)
MAX_ASKED = 1000


def _back(conversation: Conversation) -> HttpResponse:
    return redirect("lead_conversation", conversation.study.slug, conversation.pk)


def describe_parts(name: str, ranges: list[tuple[int, int]]) -> list[dict]:
    """What each part gets, as the confirmation and the messages say it."""
    out = []
    for k, (first, last) in enumerate(ranges, 1):
        turns = f"turn {first}" if first == last else f"turns {first}-{last}"
        out.append({"k": k, "external_id": part_id(name, k), "first": first, "turns": turns})
    return out


@lead_post
def split_conversation(request: HttpRequest, study: Study, conversation_id: int) -> HttpResponse:
    """POST before=N (one or more): without confirm=1, the confirmation page naming the turns
    each part gets; with it, the split."""
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    points = request.POST.getlist("before")
    try:
        if why := why_not_split(conversation):
            raise SplitRefused(why)
        ranges = part_ranges(conversation.n_turns, points)
        if request.POST.get("confirm") == "1":
            parts = split(conversation, points, by=request.user)
    except SplitRefused as exc:
        messages.error(request, str(exc))
        return _back(conversation)
    parts_said = describe_parts(conversation.key, ranges)
    if request.POST.get("confirm") != "1":
        proposals = {
            p.turn_index: p
            for p in conversation.split_proposals.filter(status=SplitProposal.Status.OPEN)
        }
        chosen = {first for first, _ in ranges[1:]}
        ctx = {
            "study": study,
            "conversation": conversation,
            "parts": parts_said,
            "points": sorted(chosen),
            "choices": [
                (k, k in chosen, proposals.get(k)) for k in range(2, conversation.n_turns + 1)
            ],
        }
        return render(request, "annotation/lead/split_confirm.html", ctx)
    said = "; ".join(f"{p['external_id']}: {p['turns']}" for p in parts_said)
    messages.success(request, f"Split {conversation.key} into {len(parts)} parts ({said}).")
    return _back(conversation)


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
        messages.success(request, f"Dismissed the split before turn {proposal.turn_index}.")
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
    if len(chosen) > MAX_ASKED:
        messages.error(request, f"At most {MAX_ASKED} conversations a job; {len(chosen)} chosen.")
        return back
    job = enqueue(
        request.user, study, JobKind.SPLIT, {"conversations": chosen}, run_split_proposals
    )
    messages.success(
        request,
        f"Asking the LLM for split points of {len(chosen)} conversation"
        f"{'s' if len(chosen) != 1 else ''} (job #{job.pk}).",
    )
    return back
