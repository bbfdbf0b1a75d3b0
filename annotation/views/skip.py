"""Putting a card off: skip it (key s), or flag it for later with a reason (key f). Either way
the next card of the queue comes at once, and the card comes back at the end of the queue
(models/queue.next_card) until it is labelled; labelling it stays allowed as usual. The lead
reads the flags on the "Flagged cards" page, which never shows anyone's labels.
An episode (issue 21) is put off the same way from its card, with the same keys: its
annotator's next episode comes, and it goes to the end of their episode queue until they
judge it (episodes/putoff.py); its flags are listed on the same page, never with anyone's
judgement."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget

from ..access import (
    get_card_for_annotator,
    get_episode_for_member,
    get_study_for_user,
    lead_page,
    round1_hidden_from,
)
from ..conversation_keys import shortened
from ..episodes import putoff
from ..episodes.queue import next_episode
from ..episodes.rounds import round1_hidden_episodes
from ..forms import EpisodeFlagForm, FlagForm, form_errors
from ..models import Annotation, CardSkip, Group, SkipKind, Study, Turn
from .shared.card import after_submit

PER_PAGE = 50
BOX = "annotation/skip/_skip_flag.html#flag_box"
# what the flags page shows: never a turn's text, nor anyone's labels
FLAG_FIELDS = ("kind", "reason", "created_at", "annotator__username", "turn__index")
FLAG_FIELDS += ("turn__conversation__key", "turn__conversation__n_turns")


@login_required
@require_POST
def skip(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    CardSkip.put_off(turn, request.user, SkipKind.SKIP)
    messages.success(request, f"Skipped {_name(turn)}: it comes back at the end of your queue.")
    return after_submit(request, study, turn)


@login_required
@require_POST
def flag(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """A flag needs a reason; a refused one comes back with what was typed (the reason box
    alone for htmx, a page of its own without JavaScript), and nothing is recorded."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    form = FlagForm(request.POST)
    if not form.is_valid():
        ctx = {"study": study, "turn": turn, "reason": request.POST.get("reason", "")}
        ctx["flag_error"] = form_errors(form, " ")
        if request.htmx:
            response = render(request, BOX, ctx, status=422)
            return retarget(reswap(response, "outerHTML"), "#flag-box")
        return render(request, "annotation/skip/flag.html", ctx, status=422)
    CardSkip.put_off(turn, request.user, SkipKind.FLAG, form.cleaned_data["reason"])
    messages.success(
        request, f"Flagged {_name(turn)} for later: it comes back at the end of your queue."
    )
    return after_submit(request, study, turn)


def _name(turn: Turn) -> str:
    return f"turn {turn.index} of {shortened(turn.conversation.key, 48)}"


@lead_page
@require_GET
def flagged_cards(request: HttpRequest, study: Study) -> HttpResponse:
    """The study's flags, newest first, with whether their annotator has labelled the card
    since: three queries a page, whatever the number of flags. A reason may give a judgment
    away, so someone else's reason on a card the lead annotates in round 1 stays hidden
    (access.round1_hidden_from), like the labels and notes."""
    labelled = Annotation.objects.filter(
        turn_id=OuterRef("turn_id"), annotator_id=OuterRef("annotator_id"), round=1
    ).filter(is_current=True)
    # the flagger's group for the card, so the link opens that group's discussion
    group = Group.objects.filter(
        assignments__conversation_id=OuterRef("turn__conversation_id"),
        annotators=OuterRef("annotator_id"),
    ).values("pk")[:1]
    hidden = round1_hidden_from(request.user, study).filter(pk=OuterRef("turn_id"))
    flags = (
        CardSkip.objects.filter(kind=SkipKind.FLAG, turn__conversation__study=study)
        .select_related("annotator", "turn__conversation")
        .only(*FLAG_FIELDS)
        .annotate(labelled=Exists(labelled), in_group=Subquery(group), blind=Exists(hidden))
        .order_by("-created_at", "-pk")
    )
    page = Paginator(flags, PER_PAGE).get_page(request.GET.get("page"))
    for f in page:
        f.reason_hidden = f.blind and f.annotator_id != request.user.pk
    ctx = {"study": study, "page": page, "episode_page": _episode_flags(request, study)}
    return render(request, "annotation/lead/flags.html", ctx)


def _episode_flags(request: HttpRequest, study: Study):
    """The page of the study's episode flags (its own page number, `epage`), or None when
    the study has none: each flag's reason hidden where its episode is blind to the viewer
    (another's flag on an episode they judge while its round 1 is not over). Four queries."""
    flags = putoff.flags(study)
    if not flags.exists():
        return None
    page = Paginator(flags, PER_PAGE).get_page(request.GET.get("epage"))
    hidden = round1_hidden_episodes(request.user, study, {f.episode_id for f in page})
    for f in page:
        f.blind = f.episode_id in hidden
        f.reason_hidden = f.blind and f.annotator_id != request.user.pk
    return page


# -- episodes ------------------------------------------------------------------------------


def _episode_seat(request: HttpRequest, slug: str, episode_id: int):
    """The study and the episode, for one of its annotators only (a moderator or a lead who
    reads the card puts nothing off)."""
    study, role = get_study_for_user(request.user, slug)
    seat = get_episode_for_member(request.user, study, role, episode_id)
    if not seat.is_annotator:
        raise PermissionDenied("Only the episode's annotators skip or flag it.")
    return study, seat.episode


def _after_episode(request: HttpRequest, study: Study, episode) -> HttpResponse:
    """The next episode awaiting the annotator (this one, last, when no other is left)."""
    following = next_episode(request.user, study)
    if following is None:
        return redirect("queue", slug=study.slug)
    return redirect("episode_card", slug=study.slug, episode_id=following)


@login_required
@require_POST
def episode_skip(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    study, episode = _episode_seat(request, slug, episode_id)
    putoff.put_off(episode, request.user, SkipKind.SKIP)
    messages.success(
        request, f"Skipped {_episode_name(episode)}: it comes back at the end of your queue."
    )
    return _after_episode(request, study, episode)


@login_required
@require_POST
def episode_flag(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    """A flag needs a reason; a refused one comes back on a page of its own with what was
    typed, and nothing is recorded."""
    study, episode = _episode_seat(request, slug, episode_id)
    form = EpisodeFlagForm(request.POST)
    if not form.is_valid():
        ctx = {"study": study, "episode": episode, "reason": request.POST.get("reason", "")}
        ctx["flag_error"] = form_errors(form, " ")
        ctx["name"] = _episode_name(episode)
        return render(request, "annotation/skip/episode_flag.html", ctx, status=422)
    putoff.put_off(episode, request.user, SkipKind.FLAG, form.cleaned_data["reason"])
    messages.success(
        request,
        f"Flagged {_episode_name(episode)} for later: it comes back at the end of your queue.",
    )
    return _after_episode(request, study, episode)


def _episode_name(episode) -> str:
    key = shortened(episode.conversation.key, 48)
    return f"the episode of turns {episode.first_turn}–{episode.last_turn} of {key}"
