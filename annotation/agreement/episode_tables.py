"""The "Episodes" block of the agreement report (the result's `episodes` section,
episodes/report.py via data.episode_section) in the report's one spec (spec.py): every
output (the page, CSV, Markdown, LaTeX, the command's summary) prints it after the axes,
from the same Tables. These are consensus-level figures; a run's own validator verdict
(a machine's) is in a lead's copy only (access.report_result).

CSV: axis "episodes"; scopes "episode-run" (`name` the run: extracted, dropped_confidence,
imported, judged, valid, invalid, disputed, retention, precision with its Wilson interval),
"episode-reason" (`name` the run, `label` the reason: count, share), "episode-coverage"
(rating mean with its bootstrap interval, sessions, people's episodes, matched, share),
"episode-agreement" (`label` the axis: kappa, alpha, exact; `label` "whole episode": the
whole-episode exact match), "episode-cooccurrence" (`name` "symptom_x_cause", `label`
"row|col": observed, expected, lift, statistic, p), "episode-runs" (`name` "a|b": two runs
compared) and "episode-run-axes" (`name` "a|b", `label` "axis:code": each run's share).
With `by`, each table again per stratum: its scope ends in "@FIELD=VALUE"."""

from __future__ import annotations

from collections.abc import Mapping

from .spec import COUNT, DETAILS, EVERYWHERE, AxisSpec, Cell, Column, Row, Table

EPISODES = "episodes"

RUNS = (
    Column("run", "Run", "text"),
    Column("extracted", "Extracted", COUNT, text="{} extracted"),
    Column("dropped_confidence", "Dropped (confidence)", COUNT),
    Column("imported", "Imported", COUNT),
    Column("valid", "Valid", COUNT, text="{} valid"),
    Column("invalid", "Invalid", COUNT, text="{} invalid"),
    Column("disputed", "Disputed", COUNT),
    Column("retention", "Retention", "share", text="retention {}"),
    Column("precision", "Precision", text="precision {}"),
    Column("precision_ci", "95% CI (Wilson)", "ci", text="95% CI {}"),
)
REASONS = (
    Column("run", "Run", "text"),
    Column("reason", "Reason", "text"),
    Column("count", "Episodes"),
    Column("share", "Share", "share"),
)
COVERAGE = (
    Column("sessions", "Sessions rated", COUNT, text="{} sessions"),
    Column("mean", "Mean coverage (0-2)", text="coverage {}"),
    Column("mean_ci", "95% CI (bootstrap)", "ci", text="95% CI {}"),
    Column("people_episodes", "People's episodes", COUNT),
    Column("matched", "Matched by an extracted one", COUNT),
    Column("matched_share", "Matched share", "share", text="matched {}"),
)
AGREEMENT = (
    Column("axis", "Axis", "text"),
    Column("cohen_kappa", "Cohen's κ (mean of pairs)", tex="Cohen's $\\kappa$", text="kappa {}"),
    Column("alpha", "Krippendorff's α", tex="Krippendorff's $\\alpha$", text="alpha {}"),
    Column("exact", "Exact match", "share", text="exact {}"),
)
COOCCURRENCE = (
    Column("row", "Row", "text"),
    Column("col", "Column", "text"),
    Column("observed", "Observed", COUNT),
    Column("expected", "Expected"),
    Column("lift", "Lift"),
    Column("test", "Test", "text"),
    Column("p", "p"),
)
COMPARE = (
    Column("a", "Run A", "text"),
    Column("b", "Run B", "text"),
    Column("episodes_a", "Episodes A", COUNT),
    Column("episodes_b", "Episodes B", COUNT),
    Column("matched", "Matched", COUNT, text="{} matched"),
    Column("unmatched_a", "Unmatched A", COUNT),
    Column("unmatched_b", "Unmatched B", COUNT),
    Column("iou_mean", "Mean IoU", text="mean IoU {}"),
    Column("iou_median", "Median IoU"),
)
SIDE = (
    Column("axis", "Axis", "text"),
    Column("code", "Code", "text"),
    Column("share_a", "Share A", "share"),
    Column("share_b", "Share B", "share"),
)


def _ci(low, high) -> Cell:
    return Cell([low, high] if low is not None and high is not None else None)


def axis_order(axes: Mapping, order: list[str]) -> list[str]:
    """`validity` first, then the taxonomy's order (PostgreSQL's jsonb keeps an object's keys
    sorted by length, not as written), then any other axis by name."""
    rank = {a: i for i, a in enumerate(["validity", *order])}
    return sorted(axes, key=lambda a: (rank.get(a, len(rank)), a))


def _run_rows(runs: Mapping) -> tuple[Row, ...]:
    rows = []
    for name, r in sorted(runs.items()):
        p = r.get("precision") or {}
        values = {
            "run": Cell(name),
            **{k: Cell(r.get(k)) for k in ("extracted", "dropped_confidence", "imported")},
            **{k: Cell(r.get(k)) for k in ("valid", "invalid", "disputed", "retention")},
            "precision": Cell(p.get("value"), "" if p.get("value") is not None else "no verdict"),
            "precision_ci": _ci(p.get("low"), p.get("high")),
        }
        rows.append(Row(tuple(values[c.name] for c in RUNS), name=name, text=f"run {name}"))
    return tuple(rows)


def _reason_rows(runs: Mapping) -> tuple[Row, ...]:
    rows = []
    for name, r in sorted(runs.items()):
        shares = (r.get("invalid_reasons") or {}).get("codes") or {}
        for reason, entry in sorted(shares.items()):
            cells = (Cell(name), Cell(reason), Cell(entry["count"]), Cell(entry["share"]))
            rows.append(Row(cells, name=name, label=reason, text=f"{name} {reason}"))
    return tuple(rows)


def _coverage_row(coverage: Mapping) -> Row:
    rating = coverage.get("rating") or {}
    values = {
        "sessions": Cell(rating.get("n")),
        "mean": Cell(rating.get("mean"), "" if rating.get("n") else "no session rated"),
        "mean_ci": _ci(rating.get("low"), rating.get("high")),
        "people_episodes": Cell(coverage.get("people_episodes")),
        "matched": Cell(coverage.get("matched_by_extracted")),
        "matched_share": Cell(
            coverage.get("matched_share"),
            "" if coverage.get("people_episodes") else "no episode created by people",
        ),
    }
    return Row(tuple(values[c.name] for c in COVERAGE), text="coverage")


def _agreement_rows(agreement: Mapping, order: list[str]) -> tuple[Row, ...]:
    axes = agreement.get("axes") or {}
    rows = [
        Row(
            (Cell(axis), Cell(v.get("kappa")), Cell(v.get("alpha")), Cell(v.get("exact"))),
            label=axis,
            text=axis,
        )
        for axis, v in ((a, axes[a]) for a in axis_order(axes, order))
    ]
    whole = agreement.get("exact_match_all_axes")
    why = "" if whole is not None else "no pair of annotators"
    rows.append(
        Row(
            (Cell("whole episode (every axis)"), Cell(None, "not per axis"),
             Cell(None, "not per axis"), Cell(whole, why)),
            label="whole episode",
            text="whole episode",
            css="total",
        )
    )  # fmt: skip
    return tuple(rows)


def _cooccurrence_rows(key: str, table: Mapping) -> tuple[Row, ...]:
    return tuple(
        Row(
            (
                Cell(c["row"]),
                Cell(c["col"]),
                Cell(c["observed"]),
                Cell(c["expected"]),
                Cell(c["lift"], "" if c["lift"] is not None else "expected 0"),
                Cell(c["test"] or ""),
                Cell(c["p"], "" if c["p"] is not None else "a margin is 0"),
            ),
            name=key,
            label=f"{c['row']}|{c['col']}",
            text=f"{c['row']} x {c['col']}",
        )  # fmt: skip
        for c in table.get("cells", [])
    )


def _figures_tables(
    figures: Mapping, order: list[str], suffix: str = "", where: str = "", n: int = 0
) -> list[Table]:
    """The figures' tables; a stratum's (`where` "FIELD = VALUE", the n-th) have their
    scope ending in `suffix` "@FIELD=VALUE" and their id in "-sN"."""
    runs = figures.get("runs") or {}
    tid = f"-s{n}" if where else ""
    at = f" ({where})" if where else ""
    tables = [
        Table(
            f"episode-runs{tid}",
            f"Extraction runs: precision and retention{at}",
            f"episode-run{suffix}",
            RUNS,
            _run_rows(runs),
            outputs=EVERYWHERE,
            intro="Per run: episodes extracted (read from the extractor's file), dropped "
            "under the confidence threshold, imported, and judged by people's consensus (in "
            "round 1, or in the discussion round after a disagreement); retention = valid / "
            "extracted; precision = valid / (valid + invalid).",
            empty="No extraction run.",
        ),
        Table(
            f"episode-reasons{tid}",
            f"Why episodes were judged invalid{at}",
            f"episode-reason{suffix}",
            REASONS,
            _reason_rows(runs),
            outputs=DETAILS,
        ),
        Table(
            f"episode-coverage{tid}",
            f"Coverage{at}",
            f"episode-coverage{suffix}",
            COVERAGE,
            (_coverage_row(figures.get("coverage") or {}),),
            outputs=EVERYWHERE,
            intro="Each session's coverage is the mean of its annotators' ratings (0 none, "
            "1 partly, 2 fully); people's episodes are matched by an extracted one of the "
            "same session on turn-range IoU.",
        ),
        Table(
            f"episode-agreement{tid}",
            f"Agreement on episodes, round 1{at}",
            f"episode-agreement{suffix}",
            AGREEMENT,
            _agreement_rows(figures.get("agreement") or {}, order),
            outputs=EVERYWHERE,
            intro="Per axis, over the pairs of annotators of a group: Cohen's κ and exact "
            "match (an axis on the episodes both judged valid; `validity` the verdict with "
            "its reason), Krippendorff's α over every annotator.",
        ),
    ]
    for key, table in sorted((figures.get("cooccurrence") or {}).items(), reverse=True):
        tables.append(
            Table(
                f"episode-{key.replace('_', '-')}{tid}",
                f"Co-occurrence over gold, {table['rows_axis']} x {table['cols_axis']}{at}",
                f"episode-cooccurrence{suffix}",
                COOCCURRENCE,
                _cooccurrence_rows(key, table),
                outputs=DETAILS,
                summary=f"{table['rows_axis']} x {table['cols_axis']} "
                f"({table['episodes']} gold episodes)",
                note="Lift = observed / expected under independence; p: the two-sided "
                "Fisher exact test on the 2x2 table.",
            )
        )
    return tables


def _comparison_tables(comparisons: list) -> list[Table]:
    if not comparisons:
        return []
    rows = tuple(
        Row(
            tuple(Cell(c.get(col.name)) for col in COMPARE),
            name=f"{c['run_a']}|{c['run_b']}",
            text=f"{c['run_a']} vs {c['run_b']}",
        )
        for c in ({**c, "a": c["run_a"], "b": c["run_b"]} for c in comparisons)
    )
    side = []
    for c in comparisons:
        for axis, entries in (c.get("axes") or {}).items():
            for e in entries:
                side.append(
                    Row(
                        (
                            Cell(axis),
                            Cell(e["code"]),
                            Cell((e.get("a") or {}).get("share")),
                            Cell((e.get("b") or {}).get("share")),
                        ),
                        name=f"{c['run_a']}|{c['run_b']}",
                        label=f"{axis}:{e['code']}",
                    )  # fmt: skip
                )
    threshold = comparisons[0].get("iou_threshold")
    return [
        Table(
            "episode-compare",
            "Robustness: two runs compared",
            "episode-runs",
            COMPARE,
            rows,
            outputs=EVERYWHERE,
            intro=f"Episodes of the same session matched on turn-range IoU >= {threshold} "
            "(one to one, greedily by descending IoU, ties by the earliest start).",
        ),
        Table(
            "episode-compare-axes",
            "The runs' own labels side by side",
            "episode-run-axes",
            SIDE,
            tuple(side),
            outputs=DETAILS,
            summary="Axis distributions of the two runs",
        ),
    ]


def episode_spec(result: Mapping, order: list[str] = ()) -> AxisSpec | None:
    """The report's Episodes block, or None when the result has no `episodes` section;
    `order` the taxonomy's axes."""
    section = result.get(EPISODES)
    if not section:
        return None
    order = list(order)
    tables = _figures_tables(section.get("overall") or {}, order)
    tables += _comparison_tables(section.get("comparisons") or [])
    by = section.get("by")
    for n, (value, figures) in enumerate(sorted((section.get("strata") or {}).items()), 1):
        tables += _figures_tables(figures, order, f"@{by}={value}", f"{by} = {value}", n)
    return AxisSpec(EPISODES, "Episodes", tables)
