"""The annotator's pages: the study overview, the queue and the card. A card is rendered as
a whole page, or as its #card partial for htmx requests (submit, next, previous)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation.models import Proposal

from .. import evidence
from ..access import get_card_for_annotator, get_study_for_user, is_expert
from ..episodes.putoff import flag_count as episode_flag_count
from ..episodes.queue import next_episode
from ..episodes.queue import progress as episode_progress
from ..evolution import pending_labels
from ..forms import AnnotationForm, MyCardsFilter
from ..messages import context_window, text_view
from ..models import (
    CardSkip,
    CardState,
    CardStatus,
    Phase,
    Role,
    RoundClosed,
    SkipKind,
    Study,
    Turn,
    Unit,
)
from ..models.queue import next_card, progress
from ..opensort.access import labels_locked
from ..position import position
from .shared import feedback
from .shared.card import after_submit, card_status, render_card
from .shared.home import home_page
from .shared.jobs_panel import jobs_panel_context
from .shared.nav import my_cards as my_cards_of
from .shared.nav import to_discuss_count
from .shared.tags import save as save_tags


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return home_page(request)


@login_required
def study(request: HttpRequest, slug: str) -> HttpResponse:
    study, role = get_study_for_user(request.user, slug)
    progress = _progress(study, request.user)
    done, total = progress["done"], progress["total"]
    groups = request.user.annotation_groups.filter(study=study)
    ctx = {"study": study, "role": role, "is_lead": role == Role.LEAD, "done": done}
    ctx["episodes"] = episode_progress(request.user, study)
    if ctx["episodes"] is not None and not groups.filter(unit=Unit.TURN).exists():
        total = 0  # an episode group's sessions are no cards of theirs
    ctx.update(total=total, groups=groups)
    ctx["to_discuss"] = to_discuss_count(request.user, study)
    ctx["moderates"] = role == Role.LEAD or study.groups.filter(moderator=request.user).exists()
    ctx["is_expert"] = is_expert(study, request.user, role)
    ctx["split_waiting"] = pending_labels(request.user, study).count()
    if role == Role.LEAD:
        ctx["progress"] = _group_progress(study)
        ctx.update(jobs_panel_context(study, request.user, request.GET))
        flags = CardSkip.objects.filter(kind=SkipKind.FLAG, turn__conversation__study=study)
        ctx["flag_count"] = flags.count()
        ctx["episode_flag_count"] = episode_flag_count(study)
        ctx["open_sort"] = (
            study.phase == Phase.OPEN_SORT or study.groups.filter(phase=Phase.OPEN_SORT).exists()
        )
    return render(request, "annotation/study.html", ctx)


def _group_progress(study: Study) -> list[dict]:
    """Cards per state for each group, from the kept figures (models/figures.py): two
    queries over the study's groups, whatever the study's size. Cards nobody has labelled
    have no state row yet; they count as open."""
    counts = CardState.objects.counts_by_group(study)
    groups = study.groups.select_related("figures")
    rows = []
    for group in groups:
        by_status = counts.get(group.pk, {})
        row = {"group": group, "cards": group.figures.cards}
        row.update({status: by_status.get(status, 0) for status in CardStatus.values})
        row[CardStatus.OPEN] = row["cards"] - sum(by_status.values()) + by_status.get("open", 0)
        rows.append(row)
    return rows


@login_required
@require_GET
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    """Resume: in a group that judges episodes, the next episode awaiting my judgement;
    else a card brought back to me with a suggested type, else my first card without a
    round-1 label (those I skipped or flagged last), or the done page."""
    study, _ = get_study_for_user(request.user, slug)
    cards = Turn.objects.for_annotator(study, request.user)
    groups = request.user.annotation_groups.filter(study=study)
    if groups.filter(unit=Unit.EPISODE).exists():
        # a group whose unit is the episode: its members' next episode (issue 21); its
        # conversations' turns are no cards of theirs (Turn.objects.for_annotator)
        episode_id = next_episode(request.user, study)
        if episode_id is not None:
            return redirect("episode_card", slug=study.slug, episode_id=episode_id)
    # first the cards an expert's decision on my proposal brought back, still in round 1
    # (the card's state in my group: groups sharing a card each have their own)
    closed = CardState.objects.filter(
        turn_id=OuterRef("turn_id"), group__annotators=request.user
    ).exclude(status=CardStatus.OPEN)
    suggested = (
        Proposal.objects.suggesting(request.user).filter(turn__in=cards).exclude(Exists(closed))
    )
    turn_id = suggested.order_by("decided_at").values_list("turn_id", flat=True).first()
    if turn_id is None:
        turn_id = next_card(study, request.user)
    if turn_id is None:
        ctx = {"study": study, "empty": not progress(study, request.user)[1]}
        ctx["to_discuss"] = to_discuss_count(request.user, study)
        return render(request, "annotation/queue_done.html", ctx)
    return redirect("card", slug=study.slug, turn_id=turn_id)


@login_required
@require_GET
def my_cards(request: HttpRequest, slug: str) -> HttpResponse:
    """My cards, filtered by state and text (nav.filter_my_cards); the filters stay in the
    page links. A filter that makes no sense is a 400 that names it."""
    study, _ = get_study_for_user(request.user, slug)
    cards = Turn.objects.for_annotator(study, request.user).annotated_by(request.user)
    cards = cards.with_status_for(request.user).select_related("conversation")
    cards = cards.defer("reply_text", "reply_parts", "metadata", "conversation__metadata")
    filters = MyCardsFilter(request.GET)
    ctx = {"study": study, "filters": filters, "page": None}
    if not filters.is_valid():
        return render(request, "annotation/my_cards.html", ctx, status=400)
    query = request.GET.copy()
    query.pop("page", None)
    ctx["query"] = query.urlencode()
    ctx["page"] = _paginate(request, my_cards_of(study, request.user, filters, cards), 50)
    return render(request, "annotation/my_cards.html", ctx)


@never_cache  # Back must fetch the card again: the browser's copy shows labels as they were
@login_required
@require_http_methods(["GET", "POST"])
def card(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    study, _ = get_study_for_user(request.user, slug)
    turn, group = get_card_for_annotator(request.user, study, turn_id)
    types = study.taxonomy_version.type_list()
    if request.method == "GET":
        status = card_status(turn, group)
        return render_card(request, study, turn, types, group=group, card_status=status)
    if group.open_sorting:  # free tags instead of types (annotation/opensort)
        return _submit_tags(request, study, turn, group)
    locked = labels_locked(study, request.user, turn)
    if locked:  # seen the open sort's board: what is stored stays, whatever was posted
        status = card_status(turn, group)
        error = f"Not saved: {locked}"
        return render_card(
            request, study, turn, types, group=group, error=error, card_status=status, http=409
        )
    form = AnnotationForm(request.POST, types=types, card=turn)
    if not form.is_valid():
        # the input comes back, to be corrected, marked as not saved (labels.js swaps a 422)
        return render_card(
            request, study, turn, types, form=form, card_status=card_status(turn, group), http=422
        )
    try:
        form.submit(turn=turn, group=group, annotator=request.user)
    except RoundClosed as e:
        # another annotator closed round 1 meanwhile: show what is stored, never the refused
        # ticks in a locked form, and say what was not saved
        error = f"Not saved: {e} {_refused(form)}"
        return render_card(
            request,
            study,
            turn,
            types,
            error=error,
            card_status=card_status(turn, group),
            http=409,
        )
    saved = feedback.labels_saved(study.slug, turn, form.cleaned_data["chosen_types"])
    return after_submit(request, study, turn, saved, types)


def _submit_tags(request: HttpRequest, study: Study, turn: Turn, group) -> HttpResponse:
    """The card's submit in the open sort: the tag set saved, then the next card as after
    labels; bad input comes back (422) with the field named, nothing saved (409: the board
    was frozen meanwhile)."""
    posted, saved, error, http = save_tags(request, turn, group)
    if error:
        types = study.taxonomy_version.type_list()
        return render_card(
            request, study, turn, types, group=group, tags_posted=posted, error=error, http=http
        )
    return after_submit(request, study, turn, saved)


def _refused(form: AnnotationForm) -> str:
    """The refused labels and note in words, so nothing typed vanishes unseen."""
    names = ", ".join(t.name for t in form.cleaned_data["chosen_types"]) or "no smell"
    note = form.cleaned_data["note"]
    out = f"You had chosen: {names}."
    if note:
        out += f" Your note: “{note}”."
    return out + " The form shows what is stored."


@login_required
@require_GET
def card_context(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The earlier turns of the card's conversation (one click away on the card), the
    nearest CARDSORT_CONTEXT_TURNS first, then a window at a time (annotation/messages.py)."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    window = context_window(request, turn, reverse("card_context", args=[slug, turn.pk]))
    if isinstance(window, HttpResponse):
        return window
    ctx = {"study": study, **window, **text_view("card_text", slug, turn.pk)}
    return render(request, "annotation/card.html#context", ctx)


@login_required
@require_http_methods(["POST"])
def card_evidence(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The card's evidence box for a selection (quote, turn, part, hint: the selection's
    offset in the rendered message), found in the stored text; or, with `remove`, the box
    empty. Nothing is stored here: the span goes with the labels form's submit."""
    study, _ = get_study_for_user(request.user, slug)
    turn, group = get_card_for_annotator(request.user, study, turn_id)
    locked = card_status(turn, group) != CardStatus.OPEN
    locked = locked or bool(labels_locked(study, request.user, turn))
    ctx = {"study": study, "turn": turn, "locked": locked}
    if request.POST.get("remove") or ctx["locked"]:
        return render(request, "annotation/_evidence.html", ctx)
    ctx["evidence_text"] = request.POST.get("evidence", "")
    try:
        ctx.update(evidence.from_selection(turn, request.POST))
    except evidence.EvidenceError as e:
        ctx["evidence_error"] = str(e)
        return render(request, "annotation/_evidence.html", ctx, status=422)
    return render(request, "annotation/_evidence.html", ctx)


def _progress(study: Study, user) -> dict:
    """My round-1 labels (or open-sort tag sets) and my cards in the study: counted over my
    conversations and my labels, not over every card (annotation/position.py)."""
    progress = position(study, user)
    return {"done": progress.done, "total": progress.total}


def _paginate(request: HttpRequest, qs, per_page: int):
    from django.core.paginator import Paginator

    return Paginator(qs, per_page).get_page(request.GET.get("page"))
