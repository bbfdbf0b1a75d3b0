"""Time per card (issue 9): the active time annotators spend on each card, reported by the
browser (static/js/timer.js) in small increments, and the lead's statistics over it.

Active time: the card's tab is visible and there was input (key, pointer, wheel, scroll)
within the last minute. The browser counts it; the server only adds what it is sent, after
checking each increment against two caps, so a forged client cannot add hours at once:
at most MAX_REPORT_MS per report, and no more than the wall time since the annotator's last
report on the card plus SLACK_MS (network delays). The check and the addition are one
UPDATE with F(), so two tabs never lose each other's time and a burst of forged reports
at once fits the wall time once, not once per request.

The statistics (median and p90, numpy's default linear percentile) are plain functions
over DataFrames; study_tables() loads them, and keeps round 1 blind (access.round1_hidden_q):
another annotator's labels and times on a card the viewer labels blind are left out."""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pandas as pd
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .access import round1_hidden_q
from .models import Annotation, CardTime, Study, Turn

MAX_REPORT_MS = 120_000  # the browser reports every 15 s; a report never carries 2 minutes
SLACK_MS = 2_000  # a report may run ahead of the server's clock by a network delay
NO_SMELL = "(no smell)"  # the "type" of cards labelled with no type
_WHOLE_NUMBER = re.compile(r"[0-9]{1,12}")


class TimeRefused(ValueError):
    """An increment the server does not add; the message names the field."""

    field = "ms"


def parse_increment(raw: str | None) -> int:
    """The reported milliseconds: a whole number, more than 0, at most MAX_REPORT_MS."""
    if raw is None or raw == "":
        raise TimeRefused("ms: missing; send the active milliseconds as a whole number.")
    if not _WHOLE_NUMBER.fullmatch(raw):
        shown = raw if len(raw) <= 20 else raw[:20] + "…"
        raise TimeRefused(f"ms: “{shown}” is not a whole number of milliseconds.")
    ms = int(raw)
    if ms <= 0:
        raise TimeRefused("ms: must be more than 0.")
    if ms > MAX_REPORT_MS:
        raise TimeRefused(f"ms: {ms} is more than the {MAX_REPORT_MS} ms one report may carry.")
    return ms


def add_time(turn: Turn, annotator, ms: int) -> int:
    """Add `ms` of active time to the annotator's row for the card and return the new total;
    TimeRefused (nothing added) when it is more than the wall time since their last report
    on the card plus SLACK_MS. The first report creates the row (a unique constraint: of two
    first reports at once, one creates it and the other adds to it)."""
    return add_active(CardTime, {"turn": turn, "annotator": annotator}, ms, "card")


def add_active(model, row: dict, ms: int, what: str) -> int:
    """add_time's rule for the row of `model` (CardTime, EpisodeTime) that `row` names (its
    unit and annotator); `what` names the unit in the refusal ("card", "episode")."""
    rows = model.objects.filter(**row)
    if _add(rows, ms):
        return rows.values_list("active_ms", flat=True).get()
    try:
        with transaction.atomic():
            model.objects.create(**row, active_ms=ms)
        return ms
    except IntegrityError:
        pass  # the row exists: a report too recent, or another tab created it a moment ago
    if _add(rows, ms):
        return rows.values_list("active_ms", flat=True).get()
    last = rows.values_list("updated_at", flat=True).first()
    since = max((timezone.now() - last).total_seconds(), 0.0) if last else 0.0
    raise TimeRefused(
        f"ms: {ms} ms is more than the {since:.1f} s since your last report on this {what} "
        f"(plus {SLACK_MS / 1000:g} s for network delays)."
    )


def _add(rows, ms: int) -> bool:
    """Add `ms` to the row if its last report is at least `ms - SLACK_MS` ago: the check is
    in the UPDATE itself, so concurrent reports are checked one after the other."""
    now = timezone.now()
    latest_allowed = now - timedelta(milliseconds=ms - SLACK_MS)
    changed = rows.filter(updated_at__lte=latest_allowed).update(
        active_ms=F("active_ms") + ms, updated_at=now
    )
    return changed > 0


# -- the lead's statistics ------------------------------------------------------------------

TIMES = ["annotator", "turn", "active_ms"]
LABELS = ["annotator", "turn", "type"]


def time_table(times: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """n, median_ms and p90_ms of `active_ms` per group of the `by` columns, sorted by them.
    The percentile is numpy.percentile's default (linear interpolation between the two
    nearest ranks)."""
    columns = [*by, "n", "median_ms", "p90_ms"]
    if times.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in times.groupby(by, sort=True):
        values = group["active_ms"].to_numpy(dtype=float)
        stats = (len(values), float(np.median(values)), float(np.percentile(values, 90)))
        rows.append((*key, *stats))
    return pd.DataFrame(rows, columns=columns)


def card_time_tables(times: pd.DataFrame, labels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The three tables of the lead's page. `times`: one row per (annotator, turn) with its
    active_ms; `labels`: one row per (annotator, turn, type) of the round-1 labels (NO_SMELL
    for a card labelled with none). A card counts for a type when its annotator labelled it
    with that type and has a time on it; a card labelled with two types counts for both."""
    labelled = times.merge(labels, on=["annotator", "turn"], how="inner")
    return {
        "annotator": time_table(times, ["annotator"]),
        "type": time_table(labelled, ["type"]),
        "annotator_type": time_table(labelled, ["annotator", "type"]),
    }


def study_frames(study: Study, viewer) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's times and round-1 labels (current ones) as `viewer` may see them: without
    another annotator's labels or time on a card `viewer` annotates while it is still in
    round 1 (the time spent is part of their blind work). Two queries."""
    times = CardTime.objects.filter(turn__conversation__study=study, active_ms__gt=0).exclude(
        round1_hidden_q(viewer, study)
    )
    times_df = pd.DataFrame(
        list(times.values_list("annotator__username", "turn_id", "active_ms")), columns=TIMES
    )
    annotations = (
        Annotation.objects.current()
        .filter(round=1, turn__conversation__study=study)
        .exclude(round1_hidden_q(viewer, study))
    )
    # one row per type, and one with no code for "no smell" (the join to types is outer)
    rows = annotations.values_list("annotator__username", "turn_id", "types__code")
    labels_df = pd.DataFrame(list(rows), columns=LABELS)
    labels_df["type"] = labels_df["type"].fillna(NO_SMELL)
    return times_df, labels_df


def study_tables(study: Study, viewer) -> dict[str, pd.DataFrame]:
    return card_time_tables(*study_frames(study, viewer))


# -- the kept tables (issue 25): a `times` job computes them for the whole study ---------------

TABLES = {"annotator": ["annotator"], "type": ["type"], "annotator_type": ["annotator", "type"]}
STATS = ["n", "median_ms", "p90_ms"]


def table_rows(table: pd.DataFrame) -> list[dict]:
    """A statistics table (time_table's) as JSON-ready rows: its keys, n, median_ms, p90_ms."""
    return [
        {k: (int(v) if k == "n" else float(v) if k in STATS else v) for k, v in row.items()}
        for row in table.to_dict("records")
    ]


def table_of(rows: list[dict], by: list[str]) -> pd.DataFrame:
    """table_rows' rows as the table again (time_table's columns), for the page."""
    return pd.DataFrame(rows, columns=[*by, *STATS])


def tables_result(tables: dict[str, pd.DataFrame]) -> dict[str, list[dict]]:
    """card_time_tables' tables as a job keeps them (rows per annotator and type, never per
    card)."""
    return {name: table_rows(tables[name]) for name in TABLES}


def tables_from_result(kept: dict) -> dict[str, pd.DataFrame]:
    """tables_result's inverse: the three tables the page shows."""
    return {name: table_of(kept.get(name) or [], by) for name, by in TABLES.items()}


def card_times_result(study: Study) -> tuple[dict, int]:
    """The whole study's tables (study_tables(study, None): nothing hidden, every
    annotator's times and round-1 labels) as a job keeps them, and how many times it read.
    The result is study-wide, so whoever reads it must be someone nothing is hidden from
    (access.times_locked_reason)."""
    times, labels = study_frames(study, None)
    return tables_result(card_time_tables(times, labels)), len(times)
