"""The episode measures of a study, read from the database into measures.py's shapes:
per run, coverage, agreement, co-occurrence over gold, overall and per stratum of a
conversation metadata field (`by`). Only the current judgements of a group's annotators
count (a judge's are kept apart, never voting)."""

from __future__ import annotations

from collections import defaultdict

from ..models import (
    CoverageRating,
    Episode,
    EpisodeDecision,
    EpisodeJudgement,
    ExtractionRun,
    Group,
    Study,
)
from . import measures

SEED = 20260101


class UnknownRun(ValueError):
    pass


def load(study: Study) -> dict:
    """Everything the measures read, as plain dicts (a few queries)."""
    runs = {
        r.name: {"name": r.name, "counts": r.counts, "source": r.source}
        for r in ExtractionRun.objects.filter(study=study)
    }
    episodes = [
        {
            "id": pk, "conversation": c, "run": run, "first_turn": f, "last_turn": la,
            "run_valid": v, "run_invalid_reason": reason, "run_labels": labels,
        }
        for pk, c, run, f, la, v, reason, labels in Episode.objects.filter(
            conversation__study=study
        ).values_list(
            "pk", "conversation_id", "run__name", "first_turn", "last_turn", "run_valid",
            "run_invalid_reason", "run_labels",
        )
    ]  # fmt: skip
    # groups and annotators by name (unique in a study, and on the site): readable JSON
    through = Group.annotators.through
    members = set(
        through.objects.filter(group__study=study).values_list("group__name", "user__username")
    )
    voters: dict[str, int] = defaultdict(int)
    for g, _ in members:
        voters[g] += 1
    judgements = [
        {
            "episode": e, "group": g, "annotator": a, "round": r, "valid": v,
            "invalid_reason": reason, "labels": labels,
        }
        for e, g, a, r, v, reason, labels in EpisodeJudgement.objects.filter(
            episode__conversation__study=study, is_current=True
        ).values_list(
            "episode_id", "group__name", "annotator__username", "round", "valid",
            "invalid_reason", "labels",
        )
        if (g, a) in members
    ]  # fmt: skip
    # the moderators' decisions on escalated episodes, in the judgements' shape (measures.py:
    # "method": "moderator", in the round after the one escalated): each the consensus of its
    # episode in its group
    judgements += [
        {
            "episode": e, "group": g, "annotator": who or "(moderator)", "round": r + 1,
            "valid": v, "invalid_reason": reason, "labels": labels,
            "method": measures.MODERATOR,
        }
        for e, g, who, r, v, reason, labels in EpisodeDecision.objects.filter(
            episode__conversation__study=study, is_current=True
        ).values_list(
            "episode_id", "group__name", "decided_by__username", "from_round", "valid",
            "invalid_reason", "labels",
        )
    ]  # fmt: skip
    ratings = [
        {"conversation": c, "annotator": a, "group": g, "rating": r}
        for c, a, g, r in CoverageRating.objects.filter(
            conversation__study=study, is_current=True
        ).values_list("conversation_id", "annotator_id", "group_id", "rating")
    ]
    conversations = dict(study.conversations.values_list("pk", "metadata"))
    codes = {
        axis.code: [t.code for t in axis.types.all()]
        for axis in study.taxonomy_version.axes.prefetch_related("types")
    }
    return {
        "runs": runs, "episodes": episodes, "judgements": judgements, "ratings": ratings,
        "conversations": conversations, "codes": codes, "voters": dict(voters),
    }  # fmt: skip


def _figures(data: dict, run: str | None, threshold: float, stratum: bool) -> dict:
    episodes, judgements = data["episodes"], data["judgements"]
    runs = {}
    for name, info in sorted(data["runs"].items()):
        if run is not None and name != run:
            continue
        own = [e for e in episodes if e["run"] == name]
        # within a stratum only the imported episodes are known by conversation
        info = {"name": name, "counts": {"read": len(own)}} if stratum else info
        runs[name] = measures.run_measures(info, own, judgements)
    if run is not None:
        ids = {e["id"] for e in episodes if e["run"] == run}
        judgements = [j for j in judgements if j["episode"] in ids]
    axes = list(data["codes"])
    gold = list(measures.gold_labels(judgements, data["voters"]).values())
    co = {}
    if "symptom" in data["codes"]:
        co["symptom_x_symptom"] = measures.cooccurrence(gold, "symptom", "symptom", data["codes"])
        if "cause" in data["codes"]:
            co["symptom_x_cause"] = measures.cooccurrence(gold, "symptom", "cause", data["codes"])
    return {
        "conversations": len(data["conversations"]),
        "runs": runs,
        "coverage": measures.coverage_measures(
            data["ratings"], episodes, threshold=threshold, seed=SEED, run=run
        ),
        "agreement": measures.agreement(judgements, axes),
        "gold_episodes": len(gold),
        "cooccurrence": co,
    }


def _only(data: dict, conversations: set) -> dict:
    """`data` restricted to these conversations."""
    episodes = [e for e in data["episodes"] if e["conversation"] in conversations]
    ids = {e["id"] for e in episodes}
    return data | {
        "episodes": episodes,
        "judgements": [j for j in data["judgements"] if j["episode"] in ids],
        "ratings": [r for r in data["ratings"] if r["conversation"] in conversations],
        "conversations": {c: m for c, m in data["conversations"].items() if c in conversations},
    }


def episode_measures(
    study: Study, run: str | None = None, by: str | None = None, iou_threshold: float = 0.5
) -> dict:
    """The study's episode measures (JSON-serialisable): overall and, with `by`, per
    stratum of that conversation metadata field."""
    data = load(study)
    if run is not None and run not in data["runs"]:
        known = ", ".join(sorted(data["runs"])) or "none"
        raise UnknownRun(f"no run {run!r} in study {study.slug} (runs: {known})")
    result = {
        "study": study.slug,
        "run": run,
        "rules": {
            "consensus": "an episode's verdict in its deciding round (the latest round "
            "everyone who judged it in round 1 judged: round 1, or the discussion round "
            "after a disagreement) when every annotator gave the same one; the "
            "moderator's decision on an episode escalated after the discussion rounds; "
            "otherwise disputed",
            "gold": "the labels of an episode's latest round in which every annotator of "
            "its group gave the same judgement, or of its moderator's decision, when valid",
            "retention": "episodes valid by consensus / episodes extracted",
            "precision": "valid / (valid + invalid) by consensus, Wilson 95% interval",
            "coverage": "mean of the sessions' mean ratings, percentile bootstrap 95% over "
            f"sessions (2000 resamples, seed {SEED})",
            "matching": f"turn-range IoU >= {iou_threshold}",
        },
        "overall": _figures(data, run, iou_threshold, stratum=False),
    }
    if by:
        strata = measures.strata_of(data["conversations"], by)
        groups: dict[str, set] = defaultdict(set)
        for conversation, value in strata.items():
            groups[value].add(conversation)
        result["by"] = by
        result["strata"] = {
            value: _figures(_only(data, members), run, iou_threshold, stratum=True)
            for value, members in sorted(groups.items())
        }
    return result


def compare(study: Study, run_a: str, run_b: str, iou_threshold: float = 0.5) -> dict:
    """compare_runs SLUG RUN_A RUN_B: measures.compare_runs on the two runs' episodes."""
    data = load(study)
    for name in (run_a, run_b):
        if name not in data["runs"]:
            known = ", ".join(sorted(data["runs"])) or "none"
            raise UnknownRun(f"no run {name!r} in study {study.slug} (runs: {known})")
    a = [e for e in data["episodes"] if e["run"] == run_a]
    b = [e for e in data["episodes"] if e["run"] == run_b]
    return {"study": study.slug, "run_a": run_a, "run_b": run_b} | measures.compare_runs(
        a, b, iou_threshold
    )
