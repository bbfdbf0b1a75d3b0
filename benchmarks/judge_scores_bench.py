"""Judge scores benchmark (issue 22 point 5): a machine judge's scores against the gold with
their conversation-bootstrap intervals, its precision-recall curves and the dev/test
threshold, at CARDS cards in CARDS / 10 conversations, the 9 types of the interaction-smells
axis. Pure numpy (annotation/agreement/judges.py); no database.

    .venv/bin/python benchmarks/judge_scores_bench.py [--cards 100000] [--boot 1000]
        [--seed 0] [--repeat 3]

Prints, each the best of --repeat runs: the judge against the gold (point estimates and
--boot resamples), the curves, the dev/test split (threshold per type on 30% of the
conversations, the rest scored with --boot resamples), and the floor: scikit-learn's
precision_recall_fscore_support on the same cards once (the point estimates alone), with
each figure's ratio to it. Checks the point estimates against scikit-learn to 1e-9."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sklearn.metrics import precision_recall_fscore_support  # noqa: E402

from annotation.agreement.judges import dev_test, pr_curves, versus_arrays  # noqa: E402
from annotation.agreement.stats import Reference  # noqa: E402

CODES = [
    "ambiguous_instruction",
    "incomplete_instruction",
    "must_do_omission",
    "must_not_violation",
    "signature_mismatch",
    "cross_turn_inconsistency",
    "partial_functionality_breakdown",
    "code_rollback",
    "repetitive_response",
]
PREVALENCE = np.array([0.02, 0.025, 0.08, 0.015, 0.03, 0.035, 0.01, 0.005, 0.02])


def generate(n_cards: int, seed: int):
    rng = np.random.default_rng(seed)
    truth = rng.random((n_cards, len(CODES))) < PREVALENCE
    scores = np.clip(truth * 0.45 + rng.random(truth.shape) * 0.6, 0, 1).round(2)
    scores[rng.random(truth.shape) < 0.5] = np.nan  # a detector that applies to half
    given = np.nan_to_num(scores, nan=0) >= 0.5
    conversation = np.sort(rng.integers(0, max(n_cards // 10, 1), n_cards))
    return truth, given, scores, conversation


def masks(flags: np.ndarray) -> np.ndarray:
    return (flags.astype(np.uint64) << np.arange(flags.shape[1], dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64
    )


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    truth, given, scores, conversation = generate(a.cards, a.seed)
    card = np.arange(a.cards, dtype=np.int64)
    gold = Reference(card=card, mask=masks(truth))
    who = np.zeros(a.cards, dtype=np.int64)

    def versus():
        return versus_arrays(
            CODES, card, who, ["judge"], masks(given), conversation, gold,
            n_boot=a.boot, seed=a.seed,
        )["judge"]  # fmt: skip

    floor, (p, r, f, _) = best(
        lambda: precision_recall_fscore_support(truth, given, average=None, zero_division=0),
        a.repeat,
    )
    t_versus, report = best(versus, a.repeat)
    for k, code in enumerate(CODES):
        assert (
            abs(report["f1"][code] - f[k]) < 1e-9 and abs(report["precision"][code] - p[k]) < 1e-9
        )
    t_curves, _ = best(lambda: pr_curves(CODES, scores, truth), a.repeat)
    t_split, _ = best(
        lambda: dev_test(
            CODES, card, conversation, scores, truth, dev_share=0.3, seed=a.seed, n_boot=a.boot
        ),  # fmt: skip
        a.repeat,
    )
    n_conv = len(np.unique(conversation))
    print(f"{a.cards:,} cards in {n_conv:,} conversations, {len(CODES)} types, {a.boot} resamples")
    print(f"floor (scikit-learn, point estimates once): {floor:.3f} s")
    figures = (
        ("judge vs gold with intervals", t_versus),
        ("precision-recall curves", t_curves),
        ("dev/test threshold with intervals", t_split),
    )
    for name, t in figures:
        print(f"{name}: {t:.3f} s ({t / floor:.1f} x the floor)")


if __name__ == "__main__":
    main()
