"""The open sort on the annotator's card (annotation/opensort/tagging.py holds the rules):
the free-tag panel that stands in for the types, its submit, the autocomplete of one's own
tags; and the lead's switch of the study or a group into and out of the open sort."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from ..access import get_study_for_user, lead_post
from ..conversation_keys import shortened
from ..models import Group, Phase, Study, Turn
from ..opensort import tagging
from ..opensort.tagging import TagInput
from .lead import _group_response


@dataclass
class PostedTags:
    """The tag panel as posted: the chosen tags (hidden inputs `tag` and, beside each,
    `tag_description`), the tag still in the box (`new_tag`, `new_description`: a submit
    keeps what was typed), "no smell" and the note."""

    tags: list[TagInput] = field(default_factory=list)
    no_smell: bool = False
    note: str = ""

    @classmethod
    def read(cls, data: QueryDict) -> PostedTags:
        names = data.getlist("tag")
        descriptions = data.getlist("tag_description")
        descriptions += [""] * (len(names) - len(descriptions))
        tags = [TagInput(n, d) for n, d in zip(names, descriptions, strict=False)]
        typed = data.get("new_tag", "")
        if typed.strip():
            tags.append(TagInput(typed, data.get("new_description", "")))
        return cls(tags=tags, no_smell=bool(data.get("no_smell")), note=data.get("note", ""))


def panel_context(user, turn: Turn, group: Group, posted: PostedTags | None = None) -> dict:
    """What the card's tag panel shows: the user's own stored tag set (never anyone
    else's), or the input `posted` back to be corrected."""
    stored = tagging.tag_set_of(turn, group, user)
    if posted is not None:
        chosen, note, no_smell = posted.tags, posted.note, posted.no_smell
    elif stored is not None:
        chosen = [TagInput(t.name, t.description) for t in stored.tags.all()]
        note, no_smell = stored.note, not chosen
    else:
        chosen, note, no_smell = [], "", False
    visit = tagging.lock_of(group.study, user)
    return {
        "open_sort": True,
        "tags_locked": tagging.TagsLocked(visit) if visit is not None else None,
        "tag_set": stored,
        "chosen_tags": chosen,
        "tag_note": note,
        "tag_no_smell": no_smell,
        "tags_posted": posted is not None,
    }


def tags_saved(slug: str, turn: Turn, tag_set) -> SafeString:
    """ "Saved your tags: vague goal, no tests on conv-7 turn 3." with a link back."""
    names = ", ".join(t.name for t in tag_set.tags.all()) or "no smell"
    url = reverse("card", args=[slug, turn.pk])
    conversation = shortened(turn.conversation.key, 48)
    return format_html(
        'Saved your tags: {} on <a href="{}">{} turn {}</a>.',
        names,
        url,
        conversation,
        turn.index,
    )


def save(request: HttpRequest, turn: Turn, group: Group) -> tuple[PostedTags, str, str, int]:
    """The card's POST while its group open-sorts (annotate.card renders the answer): save
    the annotator's tag set. Returns (the input, what was saved in words, "", 200) or, when
    refused, (the input to send back, "", the refusal naming the field, its HTTP status:
    422 for bad input, 409 when the board was frozen meanwhile): nothing saved."""
    posted = PostedTags.read(request.POST)
    try:
        tag_set = tagging.save_tag_set(
            turn=turn,
            group=group,
            annotator=request.user,
            tags=posted.tags,
            note=posted.note,
            no_smell=posted.no_smell,
        )
    except tagging.TagRefused as e:
        return posted, "", f"Not saved: {e}", e.status
    return posted, tags_saved(group.study.slug, turn, tag_set), "", 200


@login_required
@require_GET
def tag_search(request: HttpRequest, slug: str) -> HttpResponse:
    """The autocomplete of the tag box: the requesting user's own tags in the study, never
    anyone else's (the box's own name is `new_tag`; `q` for other callers)."""
    study, _ = get_study_for_user(request.user, slug)
    text = request.GET.get("q", request.GET.get("new_tag", ""))
    tags = tagging.search_my_tags(study, request.user, text)
    ctx = {"tags": tags, "query": text}
    return render(request, "annotation/opensort/_suggestions.html", ctx)


# --- the lead's switch -------------------------------------------------------------------------


@lead_post
def study_phase(request: HttpRequest, study: Study) -> HttpResponse:
    """Switch the whole study (and the groups that follow it) into or out of the open sort."""
    phase = request.POST.get("phase", "")
    try:
        tagging.set_study_phase(study, phase)
    except tagging.PhaseRefused as e:
        messages.error(request, f"Phase not changed: {e}")
    else:
        messages.success(request, f"The study is now in the {Phase(phase).label.lower()}.")
    return redirect("lead_groups", study.slug)


@lead_post
def group_phase(request: HttpRequest, study: Study, group_id: int) -> HttpResponse:
    """Give one group its own phase, or let it follow the study's; the group's box again
    for htmx (a refusal: 422 with its reason)."""
    group = get_object_or_404(Group, pk=group_id, study=study)
    error = ""
    try:
        tagging.set_group_phase(group, request.POST.get("phase", ""))
    except tagging.PhaseRefused as e:
        error = f"Phase not changed: {e}"
    else:
        if not request.htmx:
            group.refresh_from_db()
            messages.success(request, f"Group {group}: {phase_label(group)}.")
    return _group_response(request, study, group, error)


def phase_label(group: Group) -> str:
    """The group's phase in words, saying when it follows the study's."""
    label = Phase(group.effective_phase).label.lower()
    return f"{label} (the study's)" if not group.phase else label
