"""The annotator's card as a page or its htmx partial: rendered after a GET, a refused
submit, or as the next card after any submit (labels, tags, skip, flag). The card holds the
turn, the labels form and its lock; every feature's part comes from its provider
(annotation/card), walked here without importing the feature."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect, push_url

from ...access import get_card_for_annotator
from ...card import Card, provide
from ...forms import AnnotationForm, form_errors
from ...messages import text_view
from ...models import Annotation, CardState, CardStatus, Study, Turn
from ...models.queue import next_card
from ...opensort.access import labels_locked
from . import feedback


def after_submit(
    request: HttpRequest, study: Study, turn: Turn, saved: str = "", types: list | None = None
) -> HttpResponse:
    """The next card to label (those I skipped or flagged last), saying what was `saved`
    (on the card, or as a message on the page a redirect leads to); `types`: the study's,
    when the caller has them already."""
    if saved and not request.htmx:
        feedback.tell(request, saved)
    next_id = next_card(study, request.user, turn)
    if next_id is None:
        url = reverse("queue", args=[study.slug])
        if request.htmx:
            feedback.tell(request, saved)
            return HttpResponseClientRedirect(url)
        return redirect(url)
    if not request.htmx:
        return redirect("card", slug=study.slug, turn_id=next_id)
    next_turn, next_group = get_card_for_annotator(request.user, study, next_id)
    types = types if types is not None else study.taxonomy_version.type_list()
    status = card_status(next_turn, next_group)
    response = render_card(
        request, study, next_turn, types, group=next_group, card_status=status, saved=saved
    )
    return push_url(response, reverse("card", args=[study.slug, next_id]))


def render_card(
    request: HttpRequest,
    study: Study,
    turn: Turn,
    types: list,
    *,
    group=None,
    form: AnnotationForm | None = None,
    tags_posted=None,
    error: str = "",
    card_status: str = CardStatus.OPEN,
    http: int = 200,
    saved: str = "",
) -> HttpResponse:
    """The card (a page, or its #card partial for htmx): the stored labels, or with `form`
    the input the server sent back to be corrected; `error` says why a submit was refused,
    `saved` what the previous card's submit saved. A card of a `group` in the open sort
    shows the free-tag panel (with `tags_posted`: the tags sent back to be corrected). What
    each feature adds to the card comes from its provider (annotation/card)."""
    lock = _lock(study, request.user, turn, group, card_status)
    if form is not None and lock["locked"]:
        # a locked card shows what is stored, whatever was posted to it
        errors = form_errors(form, " ")
        error, form = error or f"Not saved: {errors}", None
    mine = _my_label(turn, request.user)
    ctx = {
        "study": study,
        "turn": turn,
        **text_view("card_text", study.slug, turn.pk),
        "types": types,
        "form": form,
        "error": error,
        "saved": saved,
        "mine": mine,
        **lock,
        "state_status": card_status,
    }
    # every feature's part of the card (annotation/card's providers), for this viewer
    card = Card(study, request.user, turn, types, group, mine, form, lock["locked"], tags_posted)
    ctx.update(provide(card))
    template = "annotation/card.html#card" if request.htmx else "annotation/card.html"
    return render(request, template, ctx, status=http)


def _my_label(turn: Turn, user) -> Annotation | None:
    """My current round-1 label on the card, with its types."""
    mine = Annotation.objects.current().filter(turn=turn, annotator=user, round=1)
    return mine.prefetch_related("types").first()


def _lock(study: Study, user, turn: Turn, group, card_status: str) -> dict:
    """`locked`: the labels form is read-only, because the card has left round 1 or because
    the open sort's board locked the user's round-1 labels on it; `labels_locked`: the
    board's reason (opensort/access.labels_locked), shown on the card."""
    reason = ""
    if card_status == CardStatus.OPEN and not (group is not None and group.open_sorting):
        reason = labels_locked(study, user, turn)
    return {"locked": card_status != CardStatus.OPEN or bool(reason), "labels_locked": reason}


def card_status(turn: Turn, group) -> str:
    """The card's status in the user's group (groups sharing a card each have their own)."""
    states = CardState.objects.filter(turn=turn, group=group)
    status = states.values_list("status", flat=True).first()
    return status or CardStatus.OPEN
