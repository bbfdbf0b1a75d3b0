"""The session page of an episode group (issue 21 point 2): for an annotator of a group
whose unit is `episode`, the whole session (every turn as the card renders it), its
extracted episodes (turn range and goal, a link to each one's card, which of them the
annotator has opened or judged), the episodes the annotator recorded, a form to record an
episode the extractor missed (turn range, goal, quotes selected in the turns and located by
the server), and the session's coverage question (0 none, 1 partly, 2 fully), open once
every extracted episode is opened or judged.

What the page may show of the episodes is access.session_episodes' rule: never a run's own
verdict, labels or confidence, nobody else's judgements or ratings, and the other
annotators' episodes only once the annotator has rated the session's coverage. The
operations are annotation/actions/episodes.py's."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from ..access import get_session_for_annotator, get_study_for_user, session_episodes
from ..actions import episodes as actions
from ..messages import full_text, text_response, text_view
from ..models import Conversation, Group, Unit
from .shared import feedback
from .shared.groups import group_param


def _session(request: HttpRequest, slug: str, conversation_id: int):
    study, _ = get_study_for_user(request.user, slug)
    conversation, group = get_session_for_annotator(
        request.user, study, conversation_id, group_param(request)
    )
    return study, conversation, group


def session_url(conversation: Conversation, group: Group, name: str = "episode_session") -> str:
    return reverse(name, args=[conversation.study.slug, conversation.pk]) + f"?group={group.pk}"


def card_url(slug: str, episode_id: int, group: Group) -> str:
    """The episode's card (the `episode_card` page), or "" while there is none."""
    for kwargs in (
        {"args": [slug, episode_id]},
        {"kwargs": {"slug": slug, "episode_id": episode_id}},
    ):
        try:
            return reverse("episode_card", **kwargs) + f"?group={group.pk}"
        except NoReverseMatch:
            continue
    return ""


def panel_context(request: HttpRequest, study, conversation, group) -> dict:
    """The episode list and the coverage question, as this annotator may see them."""
    user = request.user
    visible = list(session_episodes(user, group, conversation).select_related("created_by"))
    judged = actions.judged_ids(user, group, conversation)
    seen = actions.seen_ids(user, group, conversation)
    rows = []
    for e in visible:
        row = {"pk": e.pk, "first_turn": e.first_turn, "last_turn": e.last_turn, "goal": e.goal}
        row.update(judged=e.pk in judged, seen=e.pk in seen, extracted=e.run_id is not None)
        row["card_url"] = card_url(study.slug, e.pk, group) if row["extracted"] else ""
        row["by"] = e.created_by.username if e.created_by_id else ""
        rows.append(row)
    rating = actions.current_rating(user, group, conversation)
    people = [r for r in rows if not r["extracted"]]
    return {
        "extracted": [r for r in rows if r["extracted"]],
        "mine": [r for r in people if r["by"] == user.username],
        "theirs": [r for r in people if r["by"] != user.username],
        "rating": rating,
        "coverage_closed": actions.coverage_closed_reason(user, group, conversation),
        "coverage_question": actions.COVERAGE_QUESTION,
        "coverage_choices": actions.COVERAGE_WORDS,
        "group_query": f"?group={group.pk}",
    }


def _render(request, study, conversation, group, *, status=200, **extra) -> HttpResponse:
    turns = list(conversation.turns.order_by("index"))
    ctx = {
        "study": study, "conversation": conversation, "group": group, "turns": turns,
        **text_view("episode_session_text", study.slug, conversation.pk),
        **panel_context(request, study, conversation, group),
        "form": {}, "errors": {}, "quotes": [],
    }  # fmt: skip
    ctx.update(extra)
    return render(request, "annotation/episode_session.html", ctx, status=status)


@never_cache
@login_required
@require_GET
def session(request: HttpRequest, slug: str, conversation_id: int) -> HttpResponse:
    study, conversation, group = _session(request, slug, conversation_id)
    return _render(request, study, conversation, group)


@login_required
@require_GET
def session_text(request: HttpRequest, slug: str, conversation_id: int, index: int, part: str):
    """The full text of a message the page shows cut, under the page's own access."""
    _study, conversation, _group = _session(request, slug, conversation_id)
    if not 1 <= index <= conversation.n_turns:
        raise Http404("No such message")
    text = full_text(conversation, index, part)
    return text_response(request, text, f"{conversation.key}-turn-{index}-{part}")


@login_required
@require_GET
def session_episode(request: HttpRequest, slug: str, conversation_id: int, episode_id: int):
    """One episode of the session opened on the page (an htmx partial: its turns, goal and
    quotes): an extracted one is recorded as seen. Only an episode the page may show."""
    study, conversation, group = _session(request, slug, conversation_id)
    shown = session_episodes(request.user, group, conversation)
    episode = get_object_or_404(shown, pk=episode_id)
    if episode.run_id is not None:
        actions.mark_seen(request.user, group, episode)
    if not request.htmx:
        return redirect(session_url(conversation, group) + f"#episode-{episode.pk}")
    quotes = episode.evidence.select_related("turn").only(
        "turn__index", "part", "part_index", "start", "end", "quote"
    )
    ctx = {"study": study, "conversation": conversation, "group": group, "episode": episode}
    ctx.update(panel_context(request, study, conversation, group), quotes=quotes)
    return render(request, "annotation/episode_session.html#panel", ctx)


@login_required
@require_POST
def session_quote(request: HttpRequest, slug: str, conversation_id: int) -> HttpResponse:
    """The create form's quotes box: the quotes posted, and the selection posted with them
    (quote, turn, part, part_index, hint) found in the stored text; nothing is stored here."""
    study, conversation, group = _session(request, slug, conversation_id)
    ctx = {"study": study, "conversation": conversation, "group": group, "errors": {}}
    quotes = []
    try:
        quotes = actions.posted_quotes(request.POST)
        quotes.append(actions.locate_selection(conversation, request.POST))
    except actions.EpisodeRefused as e:
        ctx["errors"] = e.errors
    ctx["quotes"] = quotes
    status = 422 if ctx["errors"] else 200
    return render(request, "annotation/episode_session.html#quotes", ctx, status=status)


@login_required
@require_POST
def session_create(request: HttpRequest, slug: str, conversation_id: int) -> HttpResponse:
    """Record an episode the extractor missed; bad input comes back (422) with each field's
    error and what was typed, nothing saved."""
    study, conversation, group = _session(request, slug, conversation_id)
    try:
        episode = actions.create_episode(request.user, group, conversation, request.POST)
    except actions.EpisodeRefused as e:
        try:
            quotes = actions.posted_quotes(request.POST)
        except actions.EpisodeRefused:
            quotes = []
        form = {k: request.POST.get(k, "") for k in ("first_turn", "last_turn", "goal")}
        return _render(
            request, study, conversation, group, status=422, form=form, errors=e.errors,
            quotes=quotes,
        )  # fmt: skip
    turns = f"turns {episode.first_turn}-{episode.last_turn}"
    if episode.first_turn == episode.last_turn:
        turns = f"turn {episode.first_turn}"
    feedback.tell(request, f"Saved: your episode on {turns} ({episode.evidence.count()} quotes).")
    return redirect(session_url(conversation, group) + "#my-episodes")


@login_required
@require_POST
def session_coverage(request: HttpRequest, slug: str, conversation_id: int) -> HttpResponse:
    """The session's coverage rating (0, 1, 2); refused (409) with why while an extracted
    episode is not yet opened or judged, 422 for a value that is not a rating."""
    study, conversation, group = _session(request, slug, conversation_id)
    value = request.POST.get("coverage", "")
    try:
        rating = actions.rate_coverage(request.user, group, conversation, value)
    except actions.CoverageRefused as e:
        status = 422 if value not in ("0", "1", "2") else 409
        return _render(request, study, conversation, group, status=status, coverage_error=str(e))
    word = dict(actions.COVERAGE_WORDS)[rating.rating]
    feedback.tell(request, f"Saved: coverage {rating.rating} ({word}) for this session.")
    return redirect(session_url(conversation, group) + "#coverage")


SESSIONS_PAGE = 50  # sessions a page (issue 25: 10,000 on one page took over a second)


class _Sessions:
    """The sessions of several groups one after the other (each group's in its own order):
    counted a group at a time, and sliced as a Paginator slices, reading only the slice."""

    def __init__(self, parts: list[tuple[Group, object]]) -> None:
        self.parts = parts  # (group, its conversations: a queryset)
        self.counts = [conversations.count() for _, conversations in parts]

    def count(self) -> int:
        return sum(self.counts)

    def __getitem__(self, wanted: slice) -> list[tuple[Group, int]]:
        out, offset = [], 0
        for (group, conversations), n in zip(self.parts, self.counts, strict=True):
            lo, hi = max(wanted.start - offset, 0), min(wanted.stop - offset, n)
            if lo < hi:
                out += [(group, pk) for pk in conversations.values_list("pk", flat=True)[lo:hi]]
            offset += n
        return out


def _session_rows(user, shown: list[tuple[Group, int]]) -> list[tuple]:
    """(group, conversation with its counts of extracted and judged episodes, rated) of the
    sessions shown."""
    rows = []
    for group in dict.fromkeys(g for g, _ in shown):
        ids = [pk for g, pk in shown if g == group]
        conversations = Conversation.objects.filter(pk__in=ids).annotate(
            n_extracted=Count("episodes", filter=Q(episodes__run__isnull=False), distinct=True),
            n_judged=Count(
                "episodes",
                filter=Q(
                    episodes__judgements__annotator=user,
                    episodes__judgements__group=group,
                    episodes__judgements__is_current=True,
                    episodes__run__isnull=False,
                ),
                distinct=True,
            ),
        )
        by_id = {c.pk: c for c in conversations}
        rated = set(
            group.coverage_ratings.filter(
                annotator=user, is_current=True, conversation_id__in=ids
            ).values_list("conversation_id", flat=True)
        )
        rows += [(group, by_id[pk], pk in rated) for pk in ids]
    return rows


@login_required
@require_GET
def sessions(request: HttpRequest, slug: str) -> HttpResponse:
    """My sessions in the study's episode groups, a page at a time: each with its extracted
    episodes, how many of them I judged, and whether I rated its coverage."""
    study, _ = get_study_for_user(request.user, slug)
    groups = request.user.annotation_groups.filter(study=study, unit=Unit.EPISODE)
    parts = [
        (group, group.conversations.visible().order_by("external_id", "pk"))
        for group in groups.order_by("name")
    ]
    page = Paginator(_Sessions(parts), SESSIONS_PAGE).get_page(request.GET.get("page"))
    rows = _session_rows(request.user, list(page.object_list))
    ctx = {"study": study, "rows": rows, "page": page}
    return render(request, "annotation/episode_sessions.html", ctx)
