"""Time per episode (issue 21): the active time annotators spend on an episode's card,
reported by the cards' clock (static/js/timer.js) to the episode's endpoint and added by the
cards' rule (annotation/timing.py add_active: a cap per report, the wall time since the last
one), into EpisodeTime. The lead's time page shows it per annotator (n, median, p90) and per
episode (the median of its annotators' times). Round 1 is blind: another annotator's time on
an episode the viewer judges while its round 1 is not over is left out
(rounds.round1_hidden_episodes), as on cards."""

from __future__ import annotations

import pandas as pd

from ..models import Episode, EpisodeTime, Study
from ..timing import add_active, time_table
from .rounds import round1_hidden_episodes

TIMES = ["annotator", "episode", "active_ms"]


def add_episode_time(episode: Episode, annotator, ms: int) -> int:
    """Add `ms` to the annotator's time on `episode` (add_time's rule) and return the total;
    TimeRefused when it is more than the wall time since their last report there."""
    return add_active(EpisodeTime, {"episode": episode, "annotator": annotator}, ms, "episode")


def episode_times(study: Study, viewer) -> pd.DataFrame:
    """One row per (annotator, episode) with a time, as `viewer` may see them: their own
    always, nobody else's on an episode hidden from them in round 1. Four queries."""
    rows = EpisodeTime.objects.filter(episode__conversation__study=study, active_ms__gt=0)
    rows = list(rows.values_list("annotator_id", "annotator__username", "episode_id", "active_ms"))
    hidden = round1_hidden_episodes(viewer, study, {e for _, _, e, _ in rows}) if rows else set()
    kept = [(name, e, ms) for who, name, e, ms in rows if who == viewer.pk or e not in hidden]
    return pd.DataFrame(kept, columns=TIMES)


def episode_time_tables(times: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per annotator (their episodes' n, median and p90) and per episode (its annotators'
    n, median and p90), from episode_times' rows."""
    return {
        "annotator": time_table(times, ["annotator"]),
        "episode": time_table(times, ["episode"]),
    }
