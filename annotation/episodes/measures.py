"""The episode study's figures on plain data (no ORM; annotation/episodes/report.py reads
the database into these shapes). Every result is JSON-serialisable (floats, ints, strings,
lists, dicts; None where a figure is undefined, e.g. a share of nothing).

Shapes:
- an episode: {"id", "conversation", "run" (name or None: a person's), "first_turn",
  "last_turn", "run_valid", "run_invalid_reason", "run_labels"};
- a judgement: {"episode", "group", "annotator", "round", "valid", "invalid_reason",
  "labels" {axis: [codes]}} (current rows of voting annotators only); a moderator's
  decision on an escalated episode comes in the same list and shape with
  "method": "moderator" (`annotator` the moderator, `round` the one after the round it was
  escalated in: report.load reads EpisodeDecision so);
- a coverage rating: {"conversation", "annotator", "group", "rating"}.

Rules, stated once:
- **Consensus validity** of an episode: the verdict of its deciding round's judgements when
  every annotator who judged it (in any group) gave the same one; "disputed" when they
  differ; "unjudged" without any judgement. The deciding round is the latest round in which
  everyone who judged the episode in round 1 judged it: round 1, or the discussion round
  that followed a disagreement (an episode agreed in discussion counts by its consensus, as
  its card shows it).
- **Gold** labels of an episode: the labels of its latest round in which every judgement
  is identical (verdict, reason and labels), when that verdict is valid; a moderator's
  decision counts as such a round (it comes after the rounds it settles).
- **Retention**: episodes judged valid by consensus / episodes extracted (read from the run's
  file, dropped and rejected ones included), and the run's own validator verdict likewise.
- **Precision**: valid / (valid + invalid) among episodes with a consensus; Wilson 95%.
- **IoU** of two turn ranges: shared turns / turns of either (ranges inclusive).
- **Matching** two sets of episodes of one conversation, one-to-one, as AGREEMENT.md fixes it:
  greedily by descending IoU, ties by the earliest start (the first set's episode's first
  turn, then the second's, then their order), pairs below the threshold left unmatched.
- **Kappa** (Cohen's) and **alpha** (Krippendorff's, nominal) on an axis: each judgement's
  value on the axis is its set of codes as one category (none: its own category); for the
  `validity` axis, the verdict with its reason."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations

import numpy as np

Z95 = 1.959963984540054
NONE = "(none)"


# --- small statistics ----------------------------------------------------------------------


def share(k: float, n: float) -> float | None:
    return None if not n else k / n


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of k successes in n trials (None, None for n = 0)."""
    if n == 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_mean(
    values: Sequence[float], seed: int = 0, n_boot: int = 2000, level: float = 0.95
) -> dict:
    """Mean with a percentile bootstrap interval (resampling the values, seeded)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return {"n": 0, "mean": None, "low": None, "high": None}
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return {"n": int(x.size), "mean": float(x.mean()), "low": float(low), "high": float(high)}


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' nominal values on the same items (None: no items, or
    chance agreement 1 with perfect agreement undefined -> 1.0 when they agree on all)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[v] * cb[v] for v in ca) / (n * n)
    if expected == 1:
        return 1.0 if observed == 1 else None
    return (observed - expected) / (1 - expected)


def krippendorff_alpha(units: Iterable[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha, nominal, for units each holding the values its raters gave
    (units with fewer than 2 values are not pairable and left out). None when undefined
    (no pairable unit, or a single value throughout)."""
    coincidences: dict[tuple, float] = defaultdict(float)
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nk - 1) if c == k else nc * nk
                if pairs:
                    coincidences[(c, k)] += pairs / (m - 1)
    n_c: dict = defaultdict(float)
    for (c, _), v in coincidences.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return None
    d_o = sum(v for (c, k), v in coincidences.items() if c != k)
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n - 1)
    if d_e == 0:
        return None
    return 1 - d_o / d_e


def iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Turn-range IoU of two inclusive ranges (first, last)."""
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    if inter <= 0:
        return 0.0
    union = (a[1] - a[0] + 1) + (b[1] - b[0] + 1) - inter
    return inter / union


def match_ranges(
    a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]], threshold: float = 0.5
) -> list[tuple[int, int, float]]:
    """(index in a, index in b, IoU) of the greedy one-to-one matching on IoU >= threshold
    (see the module docstring), in the order the pairs were taken."""
    candidates = sorted(
        (-score, x[0], y[0], i, j)
        for i, x in enumerate(a)
        for j, y in enumerate(b)
        if (score := iou(x, y)) >= threshold
    )
    used_a: set[int] = set()
    used_b: set[int] = set()
    pairs = []
    for negative, _, _, i, j in candidates:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            pairs.append((i, j, -negative))
    return pairs


# --- validity and gold ---------------------------------------------------------------------


MODERATOR = "moderator"


def is_decision(j: dict) -> bool:
    """A moderator's decision (in the judgements' list), not an annotator's judgement."""
    return j.get("method") == MODERATOR


def _verdict(j: dict) -> tuple:
    return (True, "") if j["valid"] else (False, j.get("invalid_reason") or "")


def _whole(j: dict) -> tuple:
    labels = tuple(sorted((a, tuple(sorted(c))) for a, c in (j.get("labels") or {}).items() if c))
    return (*_verdict(j), labels)


def deciding_rounds(judgements: Iterable[dict]) -> dict[int, int]:
    """{episode id: the round its consensus validity is read from}: the latest round in
    which everyone who judged the episode in round 1 judged it (round 1 itself when no later
    round is complete); a moderator's decision's round where there is one."""
    judges: dict[tuple[int, int], set] = defaultdict(set)
    decided: dict[int, int] = {}
    for j in judgements:
        if is_decision(j):
            decided[j["episode"]] = max(decided.get(j["episode"], 0), j["round"])
        else:
            judges[(j["episode"], j["round"])].add(j["annotator"])
    out: dict[int, int] = {}
    for (e, r), who in sorted(judges.items()):
        first = judges.get((e, 1), set())
        if first and who >= first:
            out[e] = r
    return out | decided


def consensus_validity(judgements: Iterable[dict]) -> dict[int, str]:
    """{episode id: "valid" | "invalid" | "disputed"} from the judgements of each episode's
    deciding round (the rule in the module docstring); an episode without a judgement is
    absent."""
    judgements = list(judgements)
    deciding = deciding_rounds(judgements)
    decided = {j["episode"] for j in judgements if is_decision(j)}
    verdicts: dict[int, set[bool]] = defaultdict(set)
    for j in judgements:
        if deciding.get(j["episode"]) == j["round"] and (
            j["episode"] not in decided or is_decision(j)
        ):
            verdicts[j["episode"]].add(bool(j["valid"]))
    return {
        e: ("disputed" if len(v) > 1 else "valid" if True in v else "invalid")
        for e, v in verdicts.items()
    }


def gold_labels(judgements: Iterable[dict], voters: dict | None = None) -> dict[int, dict]:
    """{episode id: {axis: [codes]}} for the episodes whose latest round of identical
    judgements (per group; the first group by id where several) is valid. `voters`
    ({group: number of annotators}) asks for every annotator's judgement in that round. A
    moderator's decision is such a round on its own (in its own round, after the others)."""
    rounds: dict[tuple, list[dict]] = defaultdict(list)
    for j in judgements:
        rounds[(j["episode"], j["group"], j["round"], is_decision(j))].append(j)
    latest: dict[int, tuple] = {}
    for (e, g, r, decision), js in sorted(rounds.items(), key=lambda kv: kv[0][:3]):
        if not decision and (e, g, r, True) in rounds:
            continue  # the moderator decided in this round: the decision is what counts
        complete = decision or voters is None or len(js) >= voters.get(g, 0)
        if (
            complete
            and len({_whole(j) for j in js}) == 1
            and (e not in latest or (latest[e][0] == g and r > latest[e][1]))
        ):
            latest[e] = (g, r, js[0])
    return {e: dict(j.get("labels") or {}) for e, (_, _, j) in latest.items() if j["valid"]}


def _reason_shares(reasons: Counter) -> dict:
    """{"codes": {code: {count, share}}, "reasons": {top-level reason: {count, share}}}: a
    sub-reason (`a.b`) counts under its code and under its reason `a`."""
    total = sum(reasons.values())
    tops: Counter = Counter()
    for r, c in reasons.items():
        tops[r.split(".", 1)[0]] += c

    def shares(counter: Counter) -> dict:
        return {r: {"count": round(c, 6), "share": c / total} for r, c in sorted(counter.items())}

    return {"codes": shares(reasons), "reasons": shares(tops)} if total else {}


# --- per run -------------------------------------------------------------------------------


def run_measures(run: dict, episodes: Sequence[dict], judgements: Sequence[dict]) -> dict:
    """A run's figures: `run` is {"name", "counts"} (the import's counts); `episodes` its
    imported episodes; `judgements` people's judgements of them."""
    counts = run.get("counts") or {}
    extracted = counts.get("read", len(episodes))
    ids = {e["id"] for e in episodes}
    js = [j for j in judgements if j["episode"] in ids]
    consensus = consensus_validity(js)
    deciding = deciding_rounds(js)
    tally = Counter(consensus.values())
    valid, invalid = tally["valid"], tally["invalid"]
    low, high = wilson(valid, valid + invalid)
    # each consensus-invalid episode counts once, split over its deciding round's reasons
    reasons: Counter = Counter()
    by_episode: dict[int, list[str]] = defaultdict(list)
    for j in js:
        if j["round"] == deciding.get(j["episode"]) and consensus.get(j["episode"]) == "invalid":
            by_episode[j["episode"]].append(j.get("invalid_reason") or NONE)
    for given in by_episode.values():
        for r in given:
            reasons[r] += 1 / len(given)
    run_valid = [e for e in episodes if e.get("run_valid") is not None]
    run_reasons = Counter(
        e.get("run_invalid_reason") or NONE for e in run_valid if not e["run_valid"]
    )
    kept_by_run = sum(1 for e in run_valid if e["run_valid"])
    return {
        "run": run["name"],
        "extracted": extracted,
        "imported": len(episodes),
        "dropped_confidence": counts.get("dropped_confidence", 0),
        "rejected": counts.get("rejected", 0),
        "quotes_missing": counts.get("quotes_missing", 0),
        "judged": len(consensus),
        "valid": valid,
        "invalid": invalid,
        "disputed": tally["disputed"],
        "unjudged": len(ids) - len(consensus),
        "retention": share(valid, extracted),
        "precision": {"value": share(valid, valid + invalid), "low": low, "high": high,
                      "n": valid + invalid, "method": "Wilson score, 95%"},
        "invalid_reasons": _reason_shares(reasons),
        "run_verdict": {
            "judged": len(run_valid),
            "valid": kept_by_run,
            "invalid": len(run_valid) - kept_by_run,
            "retention": share(kept_by_run, extracted) if run_valid else None,
            "invalid_reasons": _reason_shares(run_reasons),
        },
    }  # fmt: skip


# --- coverage ------------------------------------------------------------------------------


def coverage_measures(
    ratings: Sequence[dict],
    episodes: Sequence[dict],
    threshold: float = 0.5,
    seed: int = 0,
    run: str | None = None,
) -> dict:
    """Mean session coverage rating (each session the mean of its current ratings; the
    sessions' mean with a seeded bootstrap 95% interval over sessions), and the share of
    people's episodes (run None) matched by an extracted one (of `run`, or of any run) of the
    same conversation with IoU >= threshold (each person's episode matched on its own)."""
    per_session: dict = defaultdict(list)
    for r in ratings:
        per_session[r["conversation"]].append(r["rating"])
    session_means = [sum(v) / len(v) for _, v in sorted(per_session.items())]
    rating = bootstrap_mean(session_means, seed=seed) | {"scale": "0 none, 1 partly, 2 fully"}
    people = [e for e in episodes if e.get("run") is None]
    extracted: dict = defaultdict(list)
    for e in episodes:
        if e.get("run") is not None and (run is None or e["run"] == run):
            extracted[e["conversation"]].append((e["first_turn"], e["last_turn"]))
    matched = sum(
        1
        for p in people
        if any(
            iou((p["first_turn"], p["last_turn"]), r) >= threshold
            for r in extracted[p["conversation"]]
        )
    )
    return {
        "rating": rating,
        "people_episodes": len(people),
        "matched_by_extracted": matched,
        "matched_share": share(matched, len(people)),
        "iou_threshold": threshold,
    }


# --- robustness: two runs ------------------------------------------------------------------


def _axis_distribution(episodes: Sequence[dict]) -> dict:
    """{axis: {code: {"count", "share"}}} of the runs' own labels (share of the episodes
    labelled on that axis)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    labelled: Counter = Counter()
    for e in episodes:
        for axis, codes in (e.get("run_labels") or {}).items():
            if codes:
                labelled[axis] += 1
                counts[axis].update(codes)
    return {
        axis: {c: {"count": n, "share": n / labelled[axis]} for c, n in sorted(codes.items())}
        for axis, codes in sorted(counts.items())
    }


def compare_runs(a: Sequence[dict], b: Sequence[dict], threshold: float = 0.5) -> dict:
    """Two runs' episodes matched per conversation (match_ranges), the matched pairs' IoU
    (mean, median), the unmatched on each side, and the runs' axis distributions side by
    side."""
    by_a: dict = defaultdict(list)
    by_b: dict = defaultdict(list)
    for e in a:
        by_a[e["conversation"]].append(e)
    for e in b:
        by_b[e["conversation"]].append(e)
    pairs = []
    for conversation in sorted(set(by_a) | set(by_b), key=str):
        xs, ys = by_a.get(conversation, []), by_b.get(conversation, [])
        ranges_a = [(e["first_turn"], e["last_turn"]) for e in xs]
        ranges_b = [(e["first_turn"], e["last_turn"]) for e in ys]
        for i, j, score in match_ranges(ranges_a, ranges_b, threshold):
            pairs.append({"a": xs[i]["id"], "b": ys[j]["id"], "iou": score})
    ious = [p["iou"] for p in pairs]
    dist_a, dist_b = _axis_distribution(a), _axis_distribution(b)
    side = {}
    for axis in sorted(set(dist_a) | set(dist_b)):
        codes = sorted(set(dist_a.get(axis, {})) | set(dist_b.get(axis, {})))
        side[axis] = [
            {"code": c, "a": dist_a.get(axis, {}).get(c), "b": dist_b.get(axis, {}).get(c)}
            for c in codes
        ]
    return {
        "iou_threshold": threshold,
        "matching": "greedy by descending IoU, ties by the earliest start (AGREEMENT.md)",
        "episodes_a": len(a),
        "episodes_b": len(b),
        "matched": len(pairs),
        "unmatched_a": len(a) - len(pairs),
        "unmatched_b": len(b) - len(pairs),
        "iou_mean": float(np.mean(ious)) if ious else None,
        "iou_median": float(np.median(ious)) if ious else None,
        "pairs": pairs,
        "axes": side,
    }


# --- agreement -----------------------------------------------------------------------------


def _axis_value(j: dict, axis: str) -> Hashable:
    if axis == "validity":
        valid, reason = _verdict(j)
        return "valid" if valid else f"invalid:{reason or NONE}"
    codes = (j.get("labels") or {}).get(axis) or []
    return "+".join(sorted(codes)) or NONE


def agreement(judgements: Sequence[dict], axes: Sequence[str]) -> dict:
    """Round-1 agreement. Per pair of annotators of a group (over the episodes both judged):
    per axis (and `validity`) Cohen's kappa and exact match (an axis's labels compared on
    the episodes both judged valid), and whole-episode exact match (verdict, reason and every
    axis); per axis Krippendorff's alpha over every annotator. Pairs are listed and their
    mean given."""
    first = [j for j in judgements if j["round"] == 1 and not is_decision(j)]
    by_group: dict = defaultdict(lambda: defaultdict(dict))
    for j in first:
        by_group[j["group"]][j["annotator"]][j["episode"]] = j
    pairs = []
    for group, people in sorted(by_group.items(), key=lambda kv: str(kv[0])):
        for x, y in combinations(sorted(people, key=str), 2):
            shared = sorted(set(people[x]) & set(people[y]))
            if not shared:
                continue
            row = {"group": group, "a": x, "b": y, "episodes": len(shared), "axes": {}}
            for axis in ["validity", *axes]:
                items = shared
                if axis != "validity":
                    items = [e for e in shared if people[x][e]["valid"] and people[y][e]["valid"]]
                va = [_axis_value(people[x][e], axis) for e in items]
                vb = [_axis_value(people[y][e], axis) for e in items]
                row["axes"][axis] = {
                    "n": len(items),
                    "kappa": cohen_kappa(va, vb),
                    "exact": share(sum(p == q for p, q in zip(va, vb, strict=True)), len(items)),
                }
            same = sum(_whole(people[x][e]) == _whole(people[y][e]) for e in shared)
            row["exact_match_all_axes"] = share(same, len(shared))
            pairs.append(row)
    alpha = {}
    for axis in ["validity", *axes]:
        units: dict = defaultdict(list)
        for j in first:
            if axis == "validity" or j["valid"]:
                units[(j["group"], j["episode"])].append(_axis_value(j, axis))
        alpha[axis] = krippendorff_alpha(units.values())

    def mean(values):
        values = [v for v in values if v is not None]
        return float(np.mean(values)) if values else None

    summary = {
        axis: {
            "kappa": mean(p["axes"][axis]["kappa"] for p in pairs),
            "exact": mean(p["axes"][axis]["exact"] for p in pairs),
            "alpha": alpha[axis],
        }
        for axis in ["validity", *axes]
    }
    return {
        "pairs": pairs,
        "axes": summary,
        "exact_match_all_axes": mean(p["exact_match_all_axes"] for p in pairs),
    }


# --- co-occurrence over gold ---------------------------------------------------------------


def cooccurrence(
    gold: Sequence[dict], row_axis: str, col_axis: str, codes: dict[str, list[str]]
) -> dict:
    """For each pair of a `row_axis` code and a `col_axis` code (distinct codes when the
    axes are the same), over the gold-labelled episodes: observed episodes with both,
    expected under independence (n_row * n_col / N), lift (observed / expected), and the
    two-sided Fisher exact test's p-value on the 2x2 table (AGREEMENT.md; scipy's
    fisher_exact). Its statistic is the odds ratio: null (statistic_reason) where a zero cell
    makes it infinite or undefined."""
    from scipy.stats import fisher_exact

    n = len(gold)
    has = {
        (axis, c): np.array([c in (g.get(axis) or []) for g in gold], dtype=bool)
        for axis in {row_axis, col_axis}
        for c in codes.get(axis, [])
    }
    rows = []
    for r in codes.get(row_axis, []):
        for c in codes.get(col_axis, []):
            if row_axis == col_axis and r >= c:
                continue
            x, y = has[(row_axis, r)], has[(col_axis, c)]
            both = int((x & y).sum())
            table = np.array(
                [[both, int((x & ~y).sum())], [int((~x & y).sum()), int((~x & ~y).sum())]]
            )
            expected = x.sum() * y.sum() / n if n else 0.0
            row = {"row": r, "col": c, "observed": both, "expected": float(expected),
                   "lift": float(both / expected) if expected else None,
                   "test": None, "statistic": None, "p": None}  # fmt: skip
            if n:
                stat, p = fisher_exact(table)  # two-sided
                # the odds ratio: infinite (or 0/0) with an empty cell, which JSON cannot
                # hold: null, and the p-value stands
                finite = math.isfinite(stat)
                row.update(test="fisher", statistic=float(stat) if finite else None, p=float(p))
                if not finite:
                    row["statistic_reason"] = "odds ratio undefined or infinite (a zero cell)"
            rows.append(row)
    return {"rows_axis": row_axis, "cols_axis": col_axis, "episodes": n, "cells": rows}


def heatmap_svg(table: dict, cell: int = 28) -> str:
    """An SVG heat map of a cooccurrence table's lifts (white 1, red above, blue below)."""
    from html import escape

    rows = sorted({c["row"] for c in table["cells"]})
    cols = sorted({c["col"] for c in table["cells"]})
    left, top = 220, 160
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + cell * len(cols) + 10}" '
        f'height="{top + cell * len(rows) + 10}" font-family="sans-serif" font-size="11">'
    ]
    for i, r in enumerate(rows):
        y = top + i * cell + cell * 0.65
        parts.append(f'<text x="{left - 4}" y="{y:.0f}" text-anchor="end">{escape(r)}</text>')
    for k, c in enumerate(cols):
        x = left + k * cell + cell / 2
        parts.append(
            f'<text x="{x:.0f}" y="{top - 4}" transform="rotate(-60 {x:.0f} {top - 4})">'
            f"{escape(c)}</text>"
        )
    for entry in table["cells"]:
        i, k = rows.index(entry["row"]), cols.index(entry["col"])
        lift = entry["lift"]
        if lift is None:
            fill = "#eeeeee"
        else:
            t = min(abs(math.log2(lift)) / 2, 1.0) if lift > 0 else 1.0
            shade = int(255 * (1 - t))
            fill = f"rgb(255,{shade},{shade})" if lift >= 1 else f"rgb({shade},{shade},255)"
        title = f"{entry['row']} x {entry['col']}: observed {entry['observed']}, lift " + (
            "n/a" if lift is None else f"{lift:.2f}"
        )
        parts.append(
            f'<rect x="{left + k * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
            f'fill="{fill}" stroke="#fff"><title>{escape(title)}</title></rect>'
        )
    parts.append("</svg>")
    return "".join(parts)


# --- strata --------------------------------------------------------------------------------


def strata_of(conversations: dict, field: str) -> dict:
    """{conversation: stratum}: the conversation's metadata value for `field` as text
    ("(none)" where it has none). `field` may end in `:month`: the value is then a date or
    date-time (ISO 8601 text, e.g. "2025-03-14" or "2025-03-14T09:30:00Z") and the stratum
    its month "2025-03" (a value that is not such a date: "(not a date)").
    `conversations` is {conversation: metadata dict}."""
    name, _, part = field.partition(":")
    if part not in ("", "month"):
        raise ValueError(f"--by {field}: unknown part {part!r} (only FIELD:month)")
    out = {}
    for conversation, metadata in conversations.items():
        value = (metadata or {}).get(name)
        if value in (None, ""):
            out[conversation] = NONE
        elif part == "month":
            out[conversation] = _month(str(value))
        else:
            out[conversation] = str(value)
    return out


NOT_A_DATE = "(not a date)"


def _month(value: str) -> str:
    from datetime import date

    try:
        date.fromisoformat(value[:10])
    except ValueError:
        return NOT_A_DATE
    return value[:7]
