"""The methods section's episode step (issue 21 point 4): the episode pipeline as the study
ran it (each extraction run, its confidence threshold and what it dropped, people's verdicts
by consensus, in round 1 or a discussion round), its figures (retention, precision with its
Wilson interval, the invalid reasons, coverage with its bootstrap interval and the matched
share of people's episodes, the per-axis and whole-episode agreement, the runs compared)
and a table per run. All from the latest agreement job's `episodes` section
(annotation/episodes/report.py), never computed here; a study without episodes has no such
step.

A run's own validator verdicts and labels are a model's: the text leaves them out for a
reader who does not see machine judges (Context.reads_judges), as the report does."""

from __future__ import annotations

from collections.abc import Mapping

from ..agreement.episode_tables import axis_order
from .context import Context
from .steps import Column, Step, interval, kappa, listed, plural, share

COLUMNS = (
    Column("run", "Run"),
    Column("extracted", "Extracted", "count"),
    Column("dropped_confidence", "Dropped (confidence)", "count"),
    Column("valid", "Valid", "count"),
    Column("invalid", "Invalid", "count"),
    Column("disputed", "Disputed", "count"),
    Column("retention", "Retention", "share"),
    Column("precision", "Precision", "number"),
    Column("precision_ci", "95% CI (Wilson)", "ci"),
)


def episodes_step(ctx: Context) -> Step | None:
    job = ctx.agreement_job
    section = (job.result or {}).get("episodes") if job is not None else None
    if not section:
        return None
    overall = section.get("overall") or {}
    runs = overall.get("runs") or {}
    said = [
        f"The unit of {plural(len(runs), 'extraction run')} was the episode: a stretch of a "
        "session, anchored to evidence quotes, in which the agent diverged from what the "
        "developer wanted. Episodes under a run's confidence threshold were dropped before "
        "annotation. Annotators judged each episode valid (supported by its evidence) or "
        "invalid with a reason, and labelled the valid ones on every axis; an episode's "
        "verdict is its consensus (every annotator's the same in round 1, or in the "
        "discussion round after a disagreement; for an episode still disputed after the "
        "discussion rounds, its moderator's decision, with a rationale; else disputed). "
        "Retention is valid / extracted; precision valid / (valid + invalid), with a Wilson "
        "95% interval."
    ]
    rows = []
    for name, r in sorted(runs.items()):  # jsonb keeps keys sorted by length
        said.append(_run_text(name, r, ctx.reads_judges))
        p = r.get("precision") or {}
        ci = [p["low"], p["high"]] if p.get("low") is not None else None
        rows.append(
            [name, r.get("extracted"), r.get("dropped_confidence"), r.get("valid"),
             r.get("invalid"), r.get("disputed"), r.get("retention"), p.get("value"), ci]
        )  # fmt: skip
    said.append(_coverage_text(overall.get("coverage") or {}))
    axes = [a.code for a in ctx.study.taxonomy_version.axes.all()]
    said.append(_agreement_text(overall.get("agreement") or {}, axes))
    said += [_compare_text(c) for c in section.get("comparisons") or []]
    if section.get("by"):
        said.append(
            f"Every figure is also reported per value of the conversations' "
            f"`{section['by']}` ({listed(sorted(section.get('strata') or {}))})."
        )
    return Step(
        "episodes",
        "Episodes: extraction, validation and coverage",
        " ".join(s for s in said if s),
        COLUMNS,
        rows,
        data={"rules": section.get("rules", {}), "by": section.get("by")},
    )


def _run_text(name: str, r: Mapping, machine: bool) -> str:
    p = r.get("precision") or {}
    text = (
        f"Run {name} extracted {plural(r.get('extracted') or 0, 'episode')} "
        f"({r.get('dropped_confidence', 0)} dropped for confidence); people judged "
        f"{r.get('valid', 0)} valid, {r.get('invalid', 0)} invalid and {r.get('disputed', 0)} "
        f"disputed: retention {share(r.get('retention'))}, precision {kappa(p.get('value'))} "
        f"{interval([p['low'], p['high']] if p.get('low') is not None else None)}."
    )
    reasons = ((r.get("invalid_reasons") or {}).get("reasons")) or {}
    if reasons:
        text += " Invalid episodes: " + listed(
            f"{code} {share(v['share'])}" for code, v in sorted(reasons.items())
        ) + "."  # fmt: skip
    verdict = r.get("run_verdict") or {}
    if machine and verdict.get("judged"):
        text += (
            f" The run's own validator kept {verdict.get('valid', 0)} of "
            f"{verdict['judged']} (retention {share(verdict.get('retention'))})."
        )
    return text


def _coverage_text(c: Mapping) -> str:
    rating = c.get("rating") or {}
    if not rating.get("n") and not c.get("people_episodes"):
        return ""
    text = (
        f"Coverage, rated per session (0 none, 1 partly, 2 fully) after seeing every "
        f"extracted episode: mean {kappa(rating.get('mean'))} of 2 over "
        f"{plural(rating.get('n') or 0, 'session')} "
        f"{interval([rating['low'], rating['high']] if rating.get('low') is not None else None)}"
        " (percentile bootstrap over sessions)."
    )
    if c.get("people_episodes"):
        text += (
            f" Of the {plural(c['people_episodes'], 'episode')} annotators created, "
            f"{c.get('matched_by_extracted', 0)} ({share(c.get('matched_share'))}) were "
            f"matched by an extracted one (turn-range IoU ≥ {c.get('iou_threshold')})."
        )
    return text


def _agreement_text(a: Mapping, order: list[str]) -> str:
    axes = a.get("axes") or {}
    axes = {k: axes[k] for k in axis_order(axes, order)}
    if not a.get("pairs"):
        return ""
    return (
        "Round-1 agreement per axis (mean Cohen's κ over pairs; exact match): "
        + listed(
            f"{axis} κ {kappa(v.get('kappa'))}, exact {share(v.get('exact'))}"
            for axis, v in axes.items()
        )  # fmt: skip
        + f"; whole-episode exact match {share(a.get('exact_match_all_axes'))}."
    )


def _compare_text(c: Mapping) -> str:
    return (
        f"Runs {c['run_a']} and {c['run_b']} compared: {c.get('matched', 0)} episodes matched "
        f"(IoU ≥ {c.get('iou_threshold')}; mean IoU {kappa(c.get('iou_mean'))}), "
        f"{c.get('unmatched_a', 0)} of {c['run_a']} and {c.get('unmatched_b', 0)} of "
        f"{c['run_b']} unmatched."
    )
