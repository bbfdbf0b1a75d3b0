"""The report's "Machine judges" section (issue 22 point 5), from the database: each judge
run's labels and scores against its group's consensus and the study-level gold, the
group's annotators beside it (the ceiling), the runs against each other, and for a scored
run a precision-recall curve per type and a threshold chosen on a development split
(judges.py holds the statistics; this module only gathers arrays).

    judges_section(study, data, *, n_boot, seed, dev_share) -> dict | None

None when the study has no judge run of cards (planned runs, a dry run's estimate, and runs
of episodes are left out). The section is lead-only: access.report_result removes it, and
every judge's row of `versus_consensus`, from whatever a moderator reads.

A run's cards: every card of the conversations it read (a conversation with a label of the
run's pseudo-user or a score of the run), so a card the judge left alone counts as "no
smell" from it (a judge that does not apply writes nothing). Its label set on a card is its
pseudo-user's round-1 annotation (the thresholded labels), the empty set without one. The
ceiling: the round-1 labels of the run's group's annotators (judges left out; every
annotator's when the run names no group) on the same cards, scored the same way, each
annotator against the same references. Model against model: every two runs of different
pseudo-users, on the cards both read. A scored run's curves and development split are
against the study-level gold, on the run's cards that have one.

    {"dev_share", "seed", "n_boot", "pseudo_users": [usernames],
     "runs": [{id, judge, version, user, group, model, prompt_digest, params, threshold,
               status, calls, prompt_tokens, completion_tokens, counts}],
     "axes": {axis: {"runs": {run id: {"n_cards", "n_conversations",
                                       "consensus": report | null, "gold": report | null,
                                       "ceiling": {"consensus": {annotator: report},
                                                   "gold": {annotator: report}},
                                       "pr": {code: curve}, "dev_test": {...}}},
                     "model_vs_model": [{"a": run id, "b": run id, **report}]}}}
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..models import JudgeRun, JudgeRunStatus, JudgeScore, JudgeUnits, Turn
from .judges import dev_test, model_vs_model, pr_curves, versus_arrays
from .rows import value_per
from .stats import Reference, _bits

if TYPE_CHECKING:
    from ..models import Study

# data._Loaded: the study's labels as arrays (data.py imports this module, not the reverse)
_Loaded = Any

DEV_SHARE = 0.3


def judge_runs(study: Study) -> list[JudgeRun]:
    """The study's runs of cards that ran (oldest first)."""
    return list(
        JudgeRun.objects.filter(study=study, units=JudgeUnits.CARDS)
        .exclude(status=JudgeRunStatus.PLANNED)
        .select_related("user", "group")
        .order_by("created_at", "id")
    )


def run_meta(run: JudgeRun) -> dict:
    return {
        "id": run.pk,
        "judge": run.judge,
        "version": run.version,
        "user": run.user.get_username(),
        "group": run.group.name if run.group else None,
        "model": run.model,
        "prompt_digest": run.prompt_digest,
        "params": run.params,
        "threshold": run.threshold,
        "status": run.status,
        "calls": run.calls,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "counts": run.counts,
    }


class _Run:
    """One run's cards (every card of the conversations it read) and their conversations."""

    def __init__(self, run: JudgeRun, data: _Loaded, scores: list[tuple]) -> None:
        self.run = run
        name = run.user.get_username()
        index = data.annotators.index(name) if name in data.annotators else -1
        self.records = data.annotator == index
        self.scores = scores  # (turn, conversation, axis, code, score)
        read = set(data.conversation[self.records].tolist()) | {s[1] for s in scores}
        self.conversations = read
        self.card = np.zeros(0, dtype=np.int64)
        self.conversation = np.zeros(0, dtype=np.int64)

    def set_cards(self, turns: np.ndarray, conversations: np.ndarray) -> None:
        keep = np.isin(conversations, list(self.conversations))
        self.card, self.conversation = turns[keep], conversations[keep]

    def mask(self, data: _Loaded, axis: str) -> np.ndarray:
        """The run's label mask of each of its cards (0: no label, "no smell")."""
        return value_per(
            data.card[self.records], data.masks[axis][self.records], self.card, np.uint64(0)
        )

    def score_matrix(self, axis: str, codes: list[str]) -> np.ndarray | None:
        """Cards x types: the run's score, NaN where it gave none; None without any."""
        if not self.scores:
            return None
        turn, _, s_axis, code, score = (np.array(x) for x in zip(*self.scores, strict=True))
        column = pd.Index(codes).get_indexer(code)
        row = np.searchsorted(self.card, turn)  # the cards ascend (set_cards)
        found = row < len(self.card)
        found[found] = self.card[row[found]] == turn[found]
        keep = (s_axis == axis) & (column >= 0) & found
        if not keep.any():
            return None
        out = np.full((len(self.card), len(codes)), np.nan)
        out[row[keep], column[keep]] = score[keep].astype(float)
        return out


def judges_section(
    study: Study, data: _Loaded, *, n_boot: int, seed: int, dev_share: float = DEV_SHARE
) -> dict | None:
    runs = judge_runs(study)
    if not runs:
        return None
    scores: dict[int, list[tuple]] = {run.pk: [] for run in runs}
    for row in JudgeScore.objects.filter(run__in=runs).values_list(
        "run_id", "turn_id", "turn__conversation_id", "type__axis__code", "type__code", "score"
    ):
        scores[row[0]].append(row[1:])
    gathered = [_Run(run, data, scores[run.pk]) for run in runs]
    read = set().union(*(g.conversations for g in gathered))
    turns = np.array(
        Turn.objects.filter(conversation_id__in=read)
        .order_by("id")
        .values_list("id", "conversation_id"),
        dtype=np.int64,
    ).reshape(-1, 2)
    for g in gathered:
        g.set_cards(turns[:, 0], turns[:, 1])
    conversation_of = dict(zip(turns[:, 0].tolist(), turns[:, 1].tolist(), strict=True))
    pseudo_users = {run.user.get_username() for run in runs}
    axes = {}
    for axis, codes in data.labels.codes.items():
        per_run = {
            str(g.run.pk): _run_scores(
                g,
                data,
                axis,
                list(codes),
                pseudo_users,
                n_boot=n_boot,
                seed=seed,
                dev_share=dev_share,
            )
            for g in gathered
        }
        pairs = []
        for a, b in combinations(gathered, 2):
            if a.run.user_id == b.run.user_id:
                continue
            report = model_vs_model(
                list(codes),
                (a.card, a.mask(data, axis)),
                (b.card, b.mask(data, axis)),
                conversation_of,
                n_boot=n_boot,
                seed=seed,
            )
            pairs.append({"a": a.run.pk, "b": b.run.pk, **report})
        axes[axis] = {"runs": per_run, "model_vs_model": pairs}
    return {
        "dev_share": dev_share,
        "seed": seed,
        "n_boot": n_boot,
        "pseudo_users": sorted(pseudo_users),
        "runs": [run_meta(run) for run in runs],
        "axes": axes,
    }


def _group_consensus(data: _Loaded, axis: str, group_id: int | None) -> Reference | None:
    if data.consensus is None or group_id is None:
        return None
    card, group, masks = data.consensus
    mine = group == group_id
    return Reference(card=card[mine], mask=masks[axis][mine])


def _run_scores(
    g: _Run,
    data: _Loaded,
    axis: str,
    codes: list[str],
    pseudo_users: set[str],
    *,
    n_boot: int,
    seed: int,
    dev_share: float,
) -> dict:
    name = g.run.user.get_username()
    mask = g.mask(data, axis)
    who = np.zeros(len(g.card), dtype=np.int64)
    references = {
        "consensus": _group_consensus(data, axis, g.run.group_id),
        "gold": data.gold[axis],
    }
    # the ceiling: the group's annotators (never a judge) on the run's cards
    pseudo = [i for i, n in enumerate(data.annotators) if n in pseudo_users]
    humans = ~data.judge & ~np.isin(data.annotator, pseudo) & np.isin(data.card, g.card)
    if g.run.group is not None:
        at = data.groups.index(g.run.group.name) if g.run.group.name in data.groups else -1
        humans &= data.group == at
    h_card = data.card[humans]
    out: dict = {
        "n_cards": len(g.card),
        "n_conversations": len(np.unique(g.conversation)),
        "ceiling": {},
    }
    for key, reference in references.items():
        if reference is None:
            out[key] = None
            out["ceiling"][key] = {}
            continue
        out[key] = versus_arrays(
            codes, g.card, who, [name], mask, g.conversation, reference, n_boot=n_boot, seed=seed
        ).get(name)
        out["ceiling"][key] = versus_arrays(
            codes,
            h_card,
            data.annotator[humans],
            data.annotators,
            data.masks[axis][humans],
            data.conversation[humans],
            reference,
            n_boot=n_boot,
            seed=seed,
        )
    matrix = g.score_matrix(axis, codes)
    if matrix is not None:
        gold = data.gold[axis]
        at = np.isin(g.card, np.asarray(gold.card))
        truth_mask = value_per(np.asarray(gold.card), gold.mask, g.card[at], np.uint64(0))
        truth = _bits(truth_mask, len(codes)).astype(bool)
        out["pr"] = pr_curves(codes, matrix[at], truth)
        if at.any():
            out["dev_test"] = dev_test(
                codes,
                g.card[at],
                g.conversation[at],
                matrix[at],
                truth,
                dev_share=dev_share,
                seed=seed,
                n_boot=n_boot,
            )
    return out
