"""The episode card (issue 21): one episode of a coding-agent session, for the annotators of
a group whose unit is `episode`. It shows the episode's turns in full (the rest of the
session one key away), its goal, each evidence quote highlighted in place, and asks, in this
order: is the episode valid (supported by its evidence)? If not, why? If valid, the
taxonomy's axes. Rounds are the server's (annotation/episodes/rounds.py, the import's rule):
round 1 blind; once every annotator has judged, a disagreement opens a discussion round in
which each sees the others' judgements (access.episode_judgements) and judges again; the same
judgement from all is the consensus. The group's moderator and the study's leads who do not
annotate the episode read the card without the form. An extraction run's own verdict and
labels (Episode.run_valid, run_labels) are a machine's and never shown here."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from ..access import episode_judgements, get_episode_for_member, get_study_for_user
from ..actions.episode_judgements import JudgementError, read, submit
from ..actions.episodes import mark_seen
from ..episodes import putoff, rounds
from ..episodes.marks import quote_place, turn_view
from ..episodes.queue import awaiting
from ..episodes.reasons import INVALID_REASONS
from ..hotkeys import with_keys
from ..models import CardStatus, RoundClosed, Turn

# valid ("passes") / not valid: card keys no type is given; s and f skip and flag, as on a
# turn's card (episode/_skip_flag.html)
VALID_KEY, INVALID_KEY = "p", "n"
NOT_ANNOTATOR = "Only the episode's annotators judge it: you may read it."


def _group_id(request: HttpRequest) -> int | None:
    value = request.GET.get("group", "")
    return int(value) if value.isdigit() else None


def _session_url(slug: str, conversation_id: int) -> str:
    """The session's page (views of another module, issue 21), where it exists."""
    try:
        return reverse("episode_session", args=[slug, conversation_id])
    except NoReverseMatch:
        return ""


@never_cache  # Back must fetch the card again: the browser's copy shows a judgement as it was
@login_required
@require_http_methods(["GET", "POST"])
def episode_card(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    study, role = get_study_for_user(request.user, slug)
    seat = get_episode_for_member(request.user, study, role, episode_id, _group_id(request))
    if request.method == "GET":
        if seat.is_annotator:  # opening the card counts as seen (the coverage question)
            mark_seen(request.user, seat.group, seat.episode)
        return _render(request, seat)
    if not seat.is_annotator:
        raise PermissionDenied(NOT_ANNOTATOR)
    types = study.taxonomy_version.type_list()
    try:
        asked = int(request.POST.get("round", ""))
    except ValueError:
        return _render(request, seat, error="Not saved: the form names no round.", http=400)
    try:
        posted = read(request.POST, types)
    except JudgementError as e:
        return _render(request, seat, error=f"Not saved: {e}", posted=request.POST, http=422)
    try:
        action, _state = submit(seat.episode, seat.group, request.user, asked, posted)
    except RoundClosed as e:
        return _render(request, seat, error=f"Not saved: {e}", http=409)
    verdict = "valid" if posted.valid else f"invalid ({INVALID_REASONS[posted.reason]})"
    said = "unchanged" if action == rounds.SAME else "saved"
    url = reverse("episode_card", args=[slug, seat.episode.pk])
    messages.success(
        request,
        format_html(
            "Episode {} {}: {}, round {}.",
            format_html('<a href="{}">{}</a>', url, _name(seat.episode)),
            said,
            verdict,
            asked,
        ),  # fmt: skip
        extra_tags="saved",
    )
    # the same episode while it awaits me (a discussion round my submit opened), else the
    # next one awaiting me, else this one again, saying where it stands
    now = [e for e, _ in awaiting(request.user, study)]
    if now and seat.episode.pk not in now:
        return redirect("episode_card", slug=slug, episode_id=now[0])
    return redirect(url)


def _name(episode) -> str:
    return f"{episode.conversation.key} turns {episode.first_turn}–{episode.last_turn}"


def _in_words(judgements, types) -> None:
    """Each judgement's reason and labels by name (`reason_text`, `labels_text`)."""
    names = {(t.axis.code, t.code): t.name for t in types}
    axes = {t.axis.code: t.axis.name for t in types}
    for j in judgements:
        j.reason_text = INVALID_REASONS.get(j.invalid_reason, j.invalid_reason)
        j.labels_text = "; ".join(
            f"{axes.get(a, a)}: {', '.join(names.get((a, c), c) for c in codes)}"
            for a, codes in (j.labels or {}).items()
        )


def _render(request, seat, *, error: str = "", posted=None, http: int = 200) -> HttpResponse:
    study, episode, group = seat.group.study, seat.episode, seat.group
    state = rounds.state_of(episode.pk, group)
    shown = list(episode_judgements(request.user, episode, group, state.revealed))
    mine = {j.round: j for j in shown if j.annotator_id == request.user.pk}
    open_round = state.open_round if seat.is_annotator else None
    # the form shows what was posted (refused), else my judgement of the open round, else
    # (a discussion round) my judgement of the round before, to keep or revise
    current = mine.get(open_round) or (mine.get(open_round - 1) if open_round else None)
    verdict, reason, ticked = _form_values(posted, current)
    types = with_keys(study.taxonomy_version.type_list())
    for t in types:
        t.value = f"{t.axis.code}:{t.code}"
        t.ticked = t.value in ticked
    _in_words(shown, types)
    ctx = {
        "study": study,
        "episode": episode,
        "conversation": episode.conversation,
        "group": group,
        "seat": seat,
        "state": state,
        "open_round": open_round,
        "mine_now": mine.get(open_round) if open_round else None,
        "error": error,
        "verdict": verdict,
        "reason": reason,
        "types": types,
        "reasons": [
            {"code": code, "text": text, "key": str(i), "sub": "." in code}
            for i, (code, text) in enumerate(INVALID_REASONS.items(), start=1)
        ],
        "valid_key": VALID_KEY,
        "invalid_key": INVALID_KEY,
        "mine_created": episode.created_by_id == request.user.pk,
        "put_off": putoff.mine(request.user, episode) if seat.is_annotator else None,
        "session_url": _session_url(study.slug, episode.conversation_id),
        "group_query": f"?group={group.pk}" if not seat.is_annotator else "",
        **_judgements(shown, state, seat),
        **_turns(episode),
    }
    return render(request, "annotation/episode_card.html", ctx, status=http)


def _form_values(posted, current) -> tuple[str, str, set[str]]:
    """The form's verdict ("1", "0" or ""), reason and ticked types ("axis:code"): as
    posted (a refused submit), else as `current` (a stored judgement), else none."""
    if posted is not None:
        return (
            posted.get("valid", ""),
            posted.get("invalid_reason", ""),
            set(posted.getlist("types")),
        )
    if current is not None:
        ticked = {f"{a}:{c}" for a, codes in current.labels.items() for c in codes}
        return ("1" if current.valid else "0"), current.invalid_reason, ticked
    return "", "", set()


def _judgements(shown: list, state, seat) -> dict:
    """The judgements table by round (none for an annotator in round 1: theirs is in the
    form) and the consensus, once reached (the judgement all gave in its last round)."""
    by_round = [(r, [j for j in shown if j.round == r]) for r in sorted({j.round for j in shown})]
    consensus = None
    if state.status == CardStatus.AGREED and state.rounds:
        last = [j for j in shown if j.round == state.rounds[-1]]
        consensus = last[0] if last else None
    return {
        "by_round": by_round if state.revealed or not seat.is_annotator else [],
        "consensus": consensus,
        "method": state.method,
    }


def _turns(episode) -> dict:
    """The episode's turns with its quotes marked, the quotes listed with their place."""
    quotes = list(episode.evidence.select_related("turn").order_by("order", "pk"))
    turns = Turn.objects.filter(
        conversation=episode.conversation,
        index__gte=episode.first_turn,
        index__lte=episode.last_turn,
    ).order_by("index")
    views = [turn_view(t, [q for q in quotes if q.turn_id == t.pk]) for t in turns]
    return {
        "turn_views": views,
        "quotes": [(q, quote_place(q, q.turn.index)) for q in quotes],
        "quotes_outside": sorted({q.turn.index for q in quotes} - {t.index for t in turns}),
        "has_rest": episode.first_turn > 1 or episode.last_turn < episode.conversation.n_turns,
    }


@login_required
@require_GET
def episode_context(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    """The rest of the episode's session (the turns before and after it), fetched once by
    the card's button or key c; its quotes highlighted as on the card."""
    study, role = get_study_for_user(request.user, slug)
    seat = get_episode_for_member(request.user, study, role, episode_id, _group_id(request))
    episode = seat.episode
    quotes = list(episode.evidence.all())
    turns = Turn.objects.filter(conversation=episode.conversation).exclude(
        index__gte=episode.first_turn, index__lte=episode.last_turn
    )
    views = [
        turn_view(t, [q for q in quotes if q.turn_id == t.pk], in_episode=False)
        for t in turns.order_by("index")
    ]
    ctx = {"study": study, "episode": episode, "conversation": episode.conversation}
    ctx["before"] = [v for v in views if v.turn.index < episode.first_turn]
    ctx["after"] = [v for v in views if v.turn.index > episode.last_turn]
    return render(request, "annotation/episode_card.html#rest", ctx)
