"""Discussion rounds and moderation: the annotators' "to discuss" queue, the discussion page
of a disputed card (labels per round side by side, the thread, revise or confirm), the
moderator's queue and decision, and a card's timeline.

Access is decided here, with access.py's rules, never in a template: whoever annotates a card
sees its discussion only once round 1 is over for it, whatever other role they hold (lead,
moderator, superuser), so nothing of round 1 leaks before every annotator has submitted; the
group's moderator and the study's leads who do not annotate it see it always. Every list of
labels goes through `access.round1_hidden_q` as well.

A card shared by several groups (a calibration set, an overlap share) has one discussion per
group: `?group=<id>` picks it (default: the user's own group, else the first they may see).
Each shows only its own group's labels and thread. Whoever labels the card in one group sees
another group's discussion of it only once round 1 is over for it in their own group."""

from __future__ import annotations

from itertools import chain

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import Proposal

from ..access import (
    DiscussionCard,
    card_comments,
    get_card_for_discussion,
    get_moderated_groups,
    get_study_for_user,
    group_annotations,
    round1_hidden_q,
)
from ..forms import AnnotationForm, CommentForm, ConsensusForm, QueueFilter
from ..intake import splitcheck
from ..messages import context_window, text_view
from ..models import (
    AlreadyDecided,
    Annotation,
    CardState,
    Comment,
    Consensus,
    Group,
    NotDecidable,
    Role,
    RoundClosed,
    Study,
    Turn,
)
from .shared import feedback
from .shared.groups import group_param
from .shared.nav import DisputedCards, escalated_left, escalated_left_after
from .shared.rounds_table import rounds_table

PAGE_SIZE = 50
PAGE = "annotation/discussion/page.html"


def _card(request: HttpRequest, study: Study, role: str, turn_id: int) -> DiscussionCard:
    return get_card_for_discussion(request.user, study, role, turn_id, group_param(request))


def _reload(user, study: Study, card: DiscussionCard) -> DiscussionCard:
    """The card again after a change (its state moved on), with the same access check."""
    return get_card_for_discussion(user, study, card.role, card.turn.pk, card.group.pk)


# --- queues ---------------------------------------------------------------------------------


@login_required
@require_GET
def discuss_queue(request: HttpRequest, slug: str) -> HttpResponse:
    """My disputed cards: those waiting for my labels in the round under way, and the rest,
    paged from the annotator's kept queue by state (views/shared/nav.DisputedCards): the same
    queries and time with 40 or 40,000 cards."""
    study, _ = get_study_for_user(request.user, slug)
    mine = DisputedCards(study, request.user, answered=False)
    waiting = DisputedCards(study, request.user, answered=True)
    mine = Paginator(mine, PAGE_SIZE).get_page(request.GET.get("page"))
    waiting = Paginator(waiting, PAGE_SIZE).get_page(request.GET.get("wpage"))
    ctx = {"study": study, "mine": mine, "waiting": waiting}
    return render(request, "annotation/discussion/discuss_queue.html", ctx)


def _queues(user, study, statuses: list[str], group_ids: list[int], type_code, by_group) -> list:
    """[(the states of `group_ids` in status s, their count)] for each s of `statuses`, with
    their current labels (never those hidden from `user`) prefetched; the count is the kept
    figures' (models/figures.py), None when a type filters the states."""
    current = (
        Annotation.objects.current()
        .exclude(round1_hidden_q(user, study))
        .select_related("annotator")
        .prefetch_related("types")
        .order_by("round", "annotator__username")
    )
    queues = []
    for s in statuses:  # escalated first, then disputed: each in its index's order
        states = CardState.objects.filter(group_id__in=group_ids, status=s)
        if type_code:
            states = states.involving_type(type_code)
        states = (
            states.select_related("turn__conversation", "group")
            .defer("turn__reply_text", "turn__reply_parts", "turn__metadata")
            .prefetch_related(Prefetch("turn__annotations", queryset=current, to_attr="current"))
            .order_by("updated_at", "pk")  # the longest waiting first
        )
        n = None if type_code else sum(by_group.get(g, {}).get(s, 0) for g in group_ids)
        queues.append((states, n))
    return queues


@login_required
@require_GET
def moderate_queue(request: HttpRequest, slug: str) -> HttpResponse:
    """The escalated and disputed cards of the groups I moderate (a lead: every group), with
    filters and per-status counts. Constant queries: one page of states, their current labels
    and types prefetched, whatever the size of the study."""
    study, role = get_study_for_user(request.user, slug)
    groups = get_moderated_groups(request.user, study, role)
    types = study.taxonomy_version.type_list()
    filters = QueueFilter(request.GET or None, groups=groups, types=types)
    if filters.is_bound and not filters.is_valid():
        ctx = {"study": study, "filters": filters, "page": None, "counts": [], "totals": {}}
        return render(request, "annotation/discussion/moderate_queue.html", ctx, status=400)
    f = filters.cleaned_data if filters.is_bound else {}
    status = f.get("status") or ""
    statuses = [status] if status in ("escalated", "disputed") else ["escalated", "disputed"]
    group_ids = [f["group"]] if f.get("group") else [g.pk for g in groups]
    by_group = CardState.objects.counts_by_group(study)
    queues = _queues(request.user, study, statuses, group_ids, f.get("type"), by_group)
    page = Paginator(Queues(queues), PAGE_SIZE).get_page(request.GET.get("page"))
    for state in page:
        state.latest = [a for a in state.turn.current if a.round == state.round]
    counts = [(g, by_group.get(g.pk, {})) for g in groups]
    totals = {s: sum(c.get(s, 0) for _, c in counts) for s in ("escalated", "disputed")}
    query = request.GET.copy()
    query.pop("page", None)
    ctx = {"study": study, "filters": filters, "page": page, "counts": counts, "totals": totals}
    ctx["query"] = query.urlencode()
    cards_left = _escalated_left(request.user, study, role, by_group)
    ctx |= escalated_left(request.user, study, role, cards_left, groups)
    return render(request, "annotation/discussion/moderate_queue.html", ctx)


class Queues:
    """Querysets one after the other, as one sequence for a Paginator (count and slices):
    the moderation queue's escalated cards, then its disputed ones, each read a page at a
    time in its own index order (group, status, updated_at), never sorted whole. A count
    given (the kept figures) spares its COUNT."""

    def __init__(self, queues: list[tuple]) -> None:
        self.queues = queues
        self._counts: list[int] | None = None

    def counts(self) -> list[int]:
        if self._counts is None:
            self._counts = [qs.count() if n is None else n for qs, n in self.queues]
        return self._counts

    def count(self) -> int:
        return sum(self.counts())

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list:
        start, stop, out = window.start or 0, window.stop, []
        for (qs, _), n in zip(self.queues, self.counts(), strict=True):
            if stop > 0 and start < n:
                out += list(qs[max(start, 0) : min(stop, n)])
            start, stop = start - n, stop - n
        return out


def _escalated_left(user, study, role, by_group: dict) -> int:
    """nav.escalated_for(...).count() from the kept figures: the escalated cards of the
    groups `user` may decide (all for a lead, never one where they annotate)."""
    groups = Group.objects.filter(study=study)
    if role != Role.LEAD:
        groups = groups.filter(moderator=user)
    ids = groups.exclude(annotators=user).values_list("pk", flat=True)
    return sum(by_group.get(pk, {}).get("escalated", 0) for pk in ids)


# --- the discussion page ----------------------------------------------------------------------


def _keep_span(form: AnnotationForm, turn, annotator) -> None:
    """A revision keeps its evidence's place: the page sends the quote's text only, so a quote
    left as it was keeps the span of the annotator's latest labels; an edited one is free
    text from then on."""
    if form.cleaned_data.get("span") is not None or not form.cleaned_data["evidence"]:
        return
    earlier = (
        Annotation.objects.current()
        .filter(turn=turn, annotator=annotator)
        .order_by("-round")
        .first()
    )
    if earlier is not None and earlier.evidence == form.cleaned_data["evidence"]:
        form.cleaned_data["span"] = earlier.span


@never_cache  # Back must fetch the page again: the browser's copy shows labels as they were
@login_required
@require_http_methods(["GET", "POST"])
def discussion(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The card with every round's labels side by side and the thread; the group's annotators
    revise or confirm their labels here (POST) while the card is disputed."""
    study, role = get_study_for_user(request.user, slug)
    card = _card(request, study, role, turn_id)
    if request.method == "GET":
        return _render_discussion(request, study, card)
    if not card.is_annotator:
        raise PermissionDenied("Only the group's annotators label this card.")
    stale = _stale_form(request, card)
    if stale:  # like a refused save: the form shows what is stored, the error says why
        return _render_discussion(request, study, card, error=stale, http=409)
    form = AnnotationForm(request.POST, types=study.taxonomy_version.type_list())
    if not form.is_valid():
        return _render_discussion(request, study, card, form=form, http=422)
    _keep_span(form, card.turn, request.user)
    try:
        # the server's round, checked again under the card's lock: if the card moved on
        # since it was read, RoundClosed, so a form never lands in a later round
        form.submit(turn=card.turn, group=card.group, annotator=request.user, round=card.round)
    except RoundClosed as e:
        card = _reload(request.user, study, card)
        # the form shows what is stored, never the refused ticks; the error says why
        return _render_discussion(request, study, card, error=str(e), http=409)
    saved = feedback.revision_saved(form.cleaned_data["chosen_types"], card.round)
    if not request.htmx:
        feedback.tell(request, saved)
        return redirect(reverse("discussion", args=[study.slug, card.turn.pk]) + card.query)
    return _render_discussion(request, study, _reload(request.user, study, card), saved=saved)


@login_required
@require_GET
def discussion_context(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The earlier turns, for everyone who may open the discussion (the card's own context
    partial is for annotators only)."""
    study, role = get_study_for_user(request.user, slug)
    card = _card(request, study, role, turn_id)
    url = reverse("discussion_context", args=[slug, card.turn.pk]) + card.query
    window = context_window(request, card.turn, url)
    if isinstance(window, HttpResponse):
        return window
    text = text_view("discussion_text", slug, card.turn.pk, query=card.query)
    ctx = {"study": study, **window, **text}
    return render(request, "annotation/card.html#context", ctx)


@login_required
@require_POST
def comment(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """Add to the thread; an htmx post gets the thread back, newest at the bottom."""
    study, role = get_study_for_user(request.user, slug)
    card = _card(request, study, role, turn_id)
    form = CommentForm(request.POST)
    text = request.POST.get("text", "").strip()
    error, http = "", 200
    if not card.can_comment:
        error, http = f"The discussion is closed: this card is {card.status}.", 409
    elif not form.is_valid():
        error, http = _first_error(form), 422
    else:
        text = form.cleaned_data["text"]
        mine = Comment.objects.filter(turn=card.turn, group=card.group, author=request.user)
        last = mine.last()
        # a double-submitted form posts the same text twice: keep one
        if last is None or (last.text, last.round) != (text, card.round):
            Comment.objects.create(
                turn=card.turn, group=card.group, author=request.user, round=card.round, text=text
            )
    sent = "" if error else feedback.comment_sent(card.round)
    if request.htmx:
        ctx = {"study": study, "card": card, "comments": card_comments(card), "comment_sent": sent}
        ctx.update(comment_error=error, comment_text=text if error else "")
        return render(request, "annotation/discussion/_thread.html", ctx, status=http)
    if not error:
        feedback.tell(request, sent)
        url = reverse("discussion", args=[study.slug, card.turn.pk])
        return redirect(f"{url}{card.query}#thread")
    return _render_discussion(
        request, study, card, comment_error=error, comment_text=text, http=http, page=True
    )


@login_required
@require_POST
def decide(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """The moderator's consensus on a disputed or escalated card, with a rationale. A second
    decision (double submit, two moderators) changes nothing and says who decided: 409."""
    study, role = get_study_for_user(request.user, slug)
    card = _card(request, study, role, turn_id)
    if not card.may_decide:
        if card.is_annotator:
            raise PermissionDenied("You annotate this card: its moderator or a lead decides it.")
        raise PermissionDenied("Only the group's moderator or a lead decides a card.")
    form = ConsensusForm(request.POST, types=study.taxonomy_version.type_list())
    existing = Consensus.objects.current().filter(turn=card.turn, group=card.group).first()
    if existing is not None:
        return _decision_refused(request, study, card, form, str(AlreadyDecided(existing)))
    if not form.is_valid():
        return _render_discussion(request, study, card, decision_form=form, http=422)
    d = form.cleaned_data
    try:
        # the model refuses a card that is not disputed or escalated (NotDecidable)
        CardState.decide(card.turn, card.group, request.user, d["chosen_types"], d["rationale"])
    except (AlreadyDecided, NotDecidable) as e:
        return _decision_refused(request, study, card, form, str(e))
    saved = feedback.decided(d["chosen_types"])
    if not request.htmx:
        feedback.tell(request, saved)
        return redirect(reverse("discussion", args=[study.slug, card.turn.pk]) + card.query)
    return _render_discussion(request, study, _reload(request.user, study, card), saved=saved)


def _decision_refused(request, study, card, form, message: str) -> HttpResponse:
    card = _reload(request.user, study, card)
    return _render_discussion(
        request, study, card, decision_form=form, decision_error=message, http=409
    )


# --- the timeline -----------------------------------------------------------------------------


@login_required
@require_GET
def card_timeline(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """Every label revision, comment, consensus (current or not) and proposal of the card,
    in time order. A fixed number of queries however long the history."""
    study, role = get_study_for_user(request.user, slug)
    card = _card(request, study, role, turn_id)
    turn = card.turn
    annotations = (
        group_annotations(card)
        .exclude(round1_hidden_q(request.user, study))
        .select_related("annotator")
        .prefetch_related("types")
    )
    consensus = (
        Consensus.objects.filter(turn=turn, group=card.group)
        .select_related("decided_by", "taxonomy_version__taxonomy")
        .prefetch_related("types")
    )
    events = chain(
        (("annotation", a.created_at, a) for a in annotations),
        (("comment", c.created_at, c) for c in card_comments(card)),
        (("consensus", c.decided_at, c) for c in consensus),
        _proposal_events(_proposals(turn)),
    )
    order = {"annotation": 0, "comment": 1, "consensus": 2, "proposal": 3, "proposal_decision": 4}
    events = sorted(events, key=lambda e: (e[1], order[e[0]], e[2].pk))
    ctx = {"study": study, "card": card, "turn": turn, "events": events}
    return render(request, "annotation/discussion/timeline.html", ctx)


def _proposals(turn: Turn) -> list:
    """Category proposals made on the card."""
    return list(Proposal.objects.filter(turn=turn).select_related("proposer", "decided_by"))


def _proposal_events(proposals: list):
    for p in proposals:
        yield ("proposal", p.created_at, p)
        if p.decided_at is not None:
            yield ("proposal_decision", p.decided_at, p)


# --- rendering --------------------------------------------------------------------------------


def _turn_context(study: Study, card: DiscussionCard) -> dict:
    """The split check's view of the turn, and the way to a cut message's full text."""
    text = text_view("discussion_text", study.slug, card.turn.pk, query=card.query)
    return {**splitcheck.turn_context(card.turn), **text}


def _render_discussion(
    request: HttpRequest,
    study: Study,
    card: DiscussionCard,
    *,
    form: AnnotationForm | None = None,
    error: str = "",
    saved: str = "",
    decision_form: ConsensusForm | None = None,
    decision_error: str = "",
    comment_error: str = "",
    comment_text: str = "",
    http: int = 200,
    page: bool = False,
) -> HttpResponse:
    types = study.taxonomy_version.type_list()
    annotations = list(
        group_annotations(card)
        .exclude(round1_hidden_q(request.user, study))
        .select_related("annotator", "taxonomy_version__taxonomy")
        .prefetch_related("types")
        .order_by("round", "id")
    )
    annotators = list(card.group.annotators.order_by("username"))
    mine = _latest_of(annotations, request.user, card.round) if card.is_annotator else None
    ctx = {
        "study": study,
        "card": card,
        "turn": card.turn,
        **_turn_context(study, card),
        "types": types,
        "rounds": rounds_table(annotations, annotators, card),
        "comments": card_comments(card),
        "consensus": _consensus(card),
        "form": form,
        "mine": mine,
        "mine_is_this_round": mine is not None and mine.round == card.round,
        **_revise_ticks(request.user, card, types, form, mine),
        "error": error,
        "saved": saved,
        "decision_form": decision_form,
        "decision_checked": set(decision_form.data.getlist("types")) if decision_form else set(),
        "decision_no_smell": bool(decision_form and decision_form.data.get("no_smell")),
        "decision_error": decision_error,
        "comment_error": comment_error,
        "comment_text": comment_text,
        **escalated_left_after(request.user, study, card),
    }
    template = f"{PAGE}#discussion" if request.htmx and not page else PAGE
    return render(request, template, ctx, status=http)


def _consensus(card: DiscussionCard) -> Consensus | None:
    return (
        Consensus.objects.current()
        .filter(turn=card.turn, group=card.group)
        .select_related("decided_by", "taxonomy_version__taxonomy")
        .prefetch_related("types")
        .first()
    )


def _revise_ticks(user, card: DiscussionCard, types: list, form, mine) -> dict:
    """What the revise form shows ticked: the input sent back, or my latest labels plus a
    type an expert's decision on my proposal suggests (pre-ticked, not stored)."""
    if form is not None:
        return {
            "checked": set(form.data.getlist("types")),
            "no_smell": bool(form.data.get("no_smell")),
        }
    checked = mine.codes if mine else set()
    if card.can_revise:
        by_code = {t.code: t for t in types}
        checked = Proposal.objects.pretick(user, card.turn, checked, by_code)
    return {"checked": checked, "no_smell": mine is not None and not checked}


def _latest_of(annotations: list[Annotation], user, round: int) -> Annotation | None:
    """My labels to prefill the form with: this round's if I have them, else my latest."""
    mine = [a for a in annotations if a.annotator_id == user.pk and a.is_current]
    mine = [a for a in mine if a.round <= round]
    return max(mine, key=lambda a: a.round, default=None)


def _stale_form(request: HttpRequest, card: DiscussionCard) -> str:
    """Why the posted form is stale, or "". The form carries the round it was shown for; it
    is compared with the round under way and never used as the round to save in (the
    server decides that), so "0", "-1" or "two" are refused like any other mismatch."""
    posted = request.POST.get("round")
    if posted is None or posted.strip() == str(card.round):
        return ""
    return (
        f"This form was for round {posted.strip()[:12]}, but the card is in round "
        f"{card.round} ({card.status}): nothing was saved. Read the labels as they are now "
        "and save again."
    )


def _first_error(form: forms.Form) -> str:
    """The form's first error, named by its field's label ("Comment: ...")."""
    for name, errors in form.errors.items():
        if name not in form.fields or errors[0].startswith(f"{form.fields[name].label}:"):
            return errors[0]  # a limit's error names its field already (annotation/limits.py)
        return f"{form.fields[name].label}: {errors[0]}"
    return ""
