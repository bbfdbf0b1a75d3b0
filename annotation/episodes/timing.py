"""Time per episode (issue 21): the active time annotators spend on an episode's card,
reported by the cards' clock (static/js/timer.js) to the episode's endpoint and added by the
cards' rule (annotation/timing.py add_active: a cap per report, the wall time since the last
one), into EpisodeTime. The lead's time page shows it per annotator (n, median, p90) and per
episode (the median of its annotators' times). Round 1 is blind: another annotator's time on
an episode the viewer judges while its round 1 is not over is left out
(rounds.round1_hidden_episodes), as on cards."""

from __future__ import annotations

import pandas as pd
from django.db.models import Exists, OuterRef

from ..models import Episode, EpisodeTime, Study
from ..timing import add_active, table_rows, time_table
from .rounds import round1_hidden_episodes

TIMES = ["annotator", "episode", "active_ms"]


def add_episode_time(episode: Episode, annotator, ms: int) -> int:
    """Add `ms` to the annotator's time on `episode` (add_time's rule) and return the total;
    TimeRefused when it is more than the wall time since their last report there."""
    return add_active(EpisodeTime, {"episode": episode, "annotator": annotator}, ms, "episode")


def episode_times(study: Study, viewer) -> pd.DataFrame:
    """One row per (annotator, episode) with a time, as `viewer` may see them: their own
    always, nobody else's on an episode hidden from them in round 1 (`viewer` None: nobody,
    every time kept; a `times` job's view). Four queries."""
    rows = EpisodeTime.objects.filter(episode__conversation__study=study, active_ms__gt=0)
    rows = list(rows.values_list("annotator_id", "annotator__username", "episode_id", "active_ms"))
    hidden = round1_hidden_episodes(viewer, study, {e for _, _, e, _ in rows}) if rows else set()
    me = getattr(viewer, "pk", None)
    kept = [(name, e, ms) for who, name, e, ms in rows if who == me or e not in hidden]
    return pd.DataFrame(kept, columns=TIMES)


def episode_time_tables(times: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per annotator (their episodes' n, median and p90) and per episode (its annotators'
    n, median and p90), from episode_times' rows."""
    return {
        "annotator": time_table(times, ["annotator"]),
        "episode": time_table(times, ["episode"]),
    }


def episode_times_result(study: Study) -> tuple[dict, int]:
    """The study's per-annotator table over every annotator's episode times (nothing
    hidden: a `times` job's, read only by someone nothing is hidden from) as the job keeps
    it, and how many times it read. The per-episode table is not kept (a row per episode):
    the page reads it a page at a time (timed_episodes, page_times)."""
    times = episode_times(study, None)
    return {"annotator": table_rows(time_table(times, ["annotator"]))}, len(times)


def timed_episodes(study: Study):
    """The study's episodes with a recorded time, in the sessions' order, for a page of the
    per-episode table read live (everyone's times: for a viewer nothing is hidden from)."""
    timed = EpisodeTime.objects.filter(episode=OuterRef("pk"), active_ms__gt=0)
    return Episode.objects.filter(Exists(timed), conversation__study=study)


def page_times(episode_ids) -> pd.DataFrame:
    """The per-episode table (n, median and p90 of its annotators' times) of these episodes
    only: one query for a page of them."""
    rows = EpisodeTime.objects.filter(episode_id__in=list(episode_ids), active_ms__gt=0)
    times = pd.DataFrame(
        list(rows.values_list("annotator__username", "episode_id", "active_ms")), columns=TIMES
    )
    return time_table(times, ["episode"])
