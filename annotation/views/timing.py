"""Time per card: the endpoint static/js/timer.js reports active time to (an annotator of the
card only), and the lead's page of median and p90 per annotator and per type.
The rules and the statistics are annotation/timing.py's. The same for episodes (issue 21):
their endpoint (an annotator of the episode only) and their tables on the same page
(annotation/episodes/timing.py).

The page (issue 25) reads the tables a `times` job kept (tasks.TimesRun: the whole study,
every annotator's times), a handful of queries whatever the study's size, says when they
were computed and offers to compute them again (`start_times`, the job followed as on the
Jobs panel). Those tables count everyone's times, so a lead who annotates a card (or
episode) still hidden from them (access.times_locked_reason) never gets them: their own
tables are computed live, as before, blind, and the page says so."""

from __future__ import annotations

import pandas as pd
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..access import (
    JobResults,
    get_card_for_annotator,
    get_episode_for_member,
    get_study_for_user,
    lead_page,
    lead_post,
    times_locked_reason,
)
from ..episodes.timing import (
    add_episode_time,
    episode_time_tables,
    episode_times,
    page_times,
    timed_episodes,
)
from ..jobs import enqueue
from ..models import Episode, Job, JobKind, JobStatus, Study
from ..tasks import run_times
from ..timing import (
    NO_SMELL,
    TABLES,
    TimeRefused,
    add_time,
    parse_increment,
    study_tables,
    table_of,
    tables_from_result,
)

EPISODES_PER_PAGE = 100


@login_required
@require_POST
def card_time(request: HttpRequest, slug: str, turn_id: int) -> HttpResponse:
    """Add an increment of active time (POST field `ms`) to the user's time on the card.
    CSRF-protected like every POST: sendBeacon sends the token as a form field."""
    study, _ = get_study_for_user(request.user, slug)
    turn, _group = get_card_for_annotator(request.user, study, turn_id)
    try:
        ms = parse_increment(request.POST.get("ms"))
        total = add_time(turn, request.user, ms)
    except TimeRefused as e:
        return JsonResponse({"error": str(e), "field": e.field}, status=400)
    return JsonResponse({"added_ms": ms, "active_ms": total})


@login_required
@require_POST
def episode_time(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    """card_time for an episode: add an increment (POST field `ms`) to the user's time on
    it; only its annotators have a clock there (403 for a moderator or lead reading it)."""
    study, role = get_study_for_user(request.user, slug)
    seat = get_episode_for_member(request.user, study, role, episode_id)
    if not seat.is_annotator:
        refused = {"error": "Only the episode's annotators record time on it."}
        return JsonResponse(refused, status=403)
    try:
        ms = parse_increment(request.POST.get("ms"))
        total = add_episode_time(seat.episode, request.user, ms)
    except TimeRefused as e:
        return JsonResponse({"error": str(e), "field": e.field}, status=400)
    return JsonResponse({"added_ms": ms, "active_ms": total})


JOB = "annotation/jobs/_job.html"


def _times_jobs(study: Study) -> tuple[Job | None, Job | None]:
    """The latest done `times` job (the tables shown) and the latest one still queued or
    running (its progress shown), each by an indexed query."""
    jobs = Job.objects.filter(study=study, kind=JobKind.TIMES)
    done = jobs.filter(status=JobStatus.DONE).order_by("-finished_at", "-id").first()
    pending = jobs.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).first()
    return done, pending


@lead_page
@require_GET
def card_times(request: HttpRequest, study: Study) -> HttpResponse:
    """The kept tables (the latest done `times` job), or, for a lead the times lock applies
    to, their own tables computed now, blind."""
    live = times_locked_reason(request.user, study)
    job, pending = _times_jobs(study)
    if pending is not None:
        JobResults(request.user, study).shown([pending])
    if live:
        tables, episodes = study_tables(study, request.user), _episode_rows(request, study)
    elif job is not None:
        tables = tables_from_result(job.result.get("cards") or {})
        episodes = _kept_episode_rows(request, study, job.result.get("episodes") or {})
    else:
        tables = {name: table_of([], by) for name, by in TABLES.items()}
        episodes = {"episode_times": False}
    names = _type_names(study)
    ctx = {
        "study": study,
        "live": live,
        "job": None if live else job,
        "pending": pending,
        "by_annotator": _rows(tables["annotator"], ["annotator"], names),
        "by_type": _rows(tables["type"], ["type"], names, order=list(names)),
        "by_annotator_type": _rows(
            tables["annotator_type"], ["annotator", "type"], names, order=list(names)
        ),
        **episodes,
    }
    return render(request, "annotation/timing/page.html", ctx)


@lead_post
def start_times(request: HttpRequest, study: Study) -> HttpResponse:
    """Compute the kept tables again: a `times` job (one at a time: while one is queued or
    running, it is the one followed). htmx gets the job's partial, polling until it ends;
    without it, back to the page."""
    _, pending = _times_jobs(study)
    job = pending or enqueue(request.user, study, JobKind.TIMES, {}, run_times)
    if not request.htmx:
        return redirect("lead_card_times", study.slug)
    JobResults(request.user, study).shown([job])
    return render(request, JOB, {"study": study, "job": job})


def _episode_rows(request: HttpRequest, study: Study) -> dict:
    """The episodes' tables as `request.user` may see them, computed now (none when no time
    is recorded on an episode): per annotator, and per episode in the sessions' order, a
    page of EPISODES_PER_PAGE (`epage`)."""
    times = episode_times(study, request.user)
    if times.empty:
        return {"episode_times": False}
    tables = episode_time_tables(times)
    rows = _rows(tables["episode"], ["episode"], {}, raw=True)
    per_episode = {int(r["episode"]): r for r in rows}
    ordered = Episode.objects.filter(pk__in=list(per_episode))
    page = _episode_page(request, ordered)
    for episode in page:
        episode.time = per_episode[episode.pk]
    return {
        "episode_times": True,
        "episode_by_annotator": _rows(tables["annotator"], ["annotator"], {}),
        "episode_page": page,
    }


def _kept_episode_rows(request: HttpRequest, study: Study, kept: dict) -> dict:
    """The episodes' tables for a lead nothing is hidden from: per annotator as the job kept
    it; per episode (a row each, never kept) read now, a page at a time: the page's episodes
    and their times, whatever the study's size."""
    if not kept.get("annotator"):
        return {"episode_times": False}
    page = _episode_page(request, timed_episodes(study))
    rows = _rows(page_times([e.pk for e in page]), ["episode"], {}, raw=True)
    per_episode = {int(r["episode"]): r for r in rows}
    empty = {"n": 0, "median": "", "p90": ""}  # its time removed since the page was counted
    for episode in page:
        episode.time = per_episode.get(episode.pk, empty)
    by_annotator = table_of(kept["annotator"], ["annotator"])
    return {
        "episode_times": True,
        "episode_by_annotator": _rows(by_annotator, ["annotator"], {}),
        "episode_page": page,
    }


def _episode_page(request: HttpRequest, episodes):
    ordered = episodes.select_related("conversation", "run").only(
        "first_turn", "last_turn", "conversation__key", "conversation__n_turns", "run__name"
    )
    ordered = ordered.order_by("conversation_id", "first_turn", "last_turn", "pk")
    return Paginator(ordered, EPISODES_PER_PAGE).get_page(request.GET.get("epage"))


def _type_names(study: Study) -> dict[str, str]:
    """{code: name} in the taxonomy's order, "No smell" last; with several axes the name
    says its axis."""
    types = study.taxonomy_version.type_list()
    several_axes = len({t.axis_id for t in types}) > 1
    names = {t.code: (f"{t.axis.name}: {t.name}" if several_axes else t.name) for t in types}
    names[NO_SMELL] = "No smell"
    return names


def _rows(
    table: pd.DataFrame,
    by: list[str],
    names: dict[str, str],
    order: list[str] | None = None,
    raw: bool = False,
) -> list[dict]:
    """The table's rows for the template: the `by` cells (a type by its name; a code no
    longer in the taxonomy as itself), n, and the times in seconds (`raw`: each row also
    under its first `by` column's value, as "episode": the episode's id)."""
    records = table.to_dict("records")
    if order is not None:
        rank = {code: i for i, code in enumerate(order)}
        records.sort(key=lambda r: (r.get("annotator", ""), rank.get(r["type"], len(rank))))
    return [
        {
            "keys": [names.get(r[c], r[c]) if c == "type" else r[c] for c in by],
            "n": int(r["n"]),
            "median": _seconds(r["median_ms"]),
            "p90": _seconds(r["p90_ms"]),
            **({by[0]: r[by[0]]} if raw else {}),
        }
        for r in records
    ]


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"
