"""Agreement benchmark: the pure computation of the agreement report at a million cards.

    .venv/bin/python benchmarks/agreement_bench.py [--cards 1000000] [--boot 200] [--seed 0]

Generates CARDS cards x 2 annotators (one group) x the 9 types of the interaction-smells
axis: sparse labels (each type on 0.5-8% of the cards) that the two annotators mostly share
(each misses a true label 15% of the time and adds a false one 0.5% of the time), one
frozenset object per record as the database would give them. No database, no Django.

It times, each the best of --repeat runs:
- encode: records DataFrame -> integer arrays + label bitmasks (annotation.agreement.encode),
- report: the full report from the encoded arrays, without bootstrap (n_boot=0),
- report + bootstrap: the same with --boot resamples for the pair and group intervals,
- the scikit-learn loop on the same pair: 9 x cohen_kappa_score on the binary vectors + one
  cohen_kappa_score with the label set as category (vectors built beforehand, not timed),
and prints the ratios. It also checks that the report's kappas equal sklearn's to 1e-9.

Memory: the peak of traced allocations during one full report (tracemalloc, which numpy
reports its buffers to; run apart from the timings because tracing slows allocation), and
the process's peak resident set size at the end (ru_maxrss, includes the generated data
and the libraries)."""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.agreement import encode, report_from_encoded  # noqa: E402

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
MISS, FALSE_POSITIVE = 0.15, 0.005


def generate(n_cards: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.random((n_cards, len(CODES))) < PREVALENCE
    weights = 1 << np.arange(len(CODES))
    masks = []
    for _ in range(2):
        seen = truth & (rng.random(truth.shape) >= MISS)
        seen |= rng.random(truth.shape) < FALSE_POSITIVE
        masks.append(seen @ weights)
    code_tuples = [tuple(c for i, c in enumerate(CODES) if m >> i & 1) for m in range(1 << 9)]
    card = np.repeat(np.arange(n_cards), 2)
    mask = np.column_stack(masks).reshape(-1)
    labels = np.empty(len(mask), dtype=object)
    labels[:] = [frozenset(code_tuples[m]) for m in mask]
    records = pd.DataFrame(
        {
            "card": card,
            "annotator": np.tile(np.array(["alice", "bob"], dtype=object), n_cards),
            "group": "students",
            "labels": labels,
        }
    )
    return records, masks[0], masks[1]


def best_of(repeat: int, fn):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def sklearn_loop(vectors: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    from sklearn.metrics import cohen_kappa_score

    return [cohen_kappa_score(x, y) for x, y in vectors]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=1_000_000)
    parser.add_argument("--boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    records, mask_a, mask_b = generate(args.cards, args.seed)
    print(f"{args.cards:,} cards x 2 annotators x {len(CODES)} types = {len(records):,} records")

    t_encode, enc = best_of(args.repeat, lambda: encode(records, CODES))
    t_report, report = best_of(args.repeat, lambda: report_from_encoded(enc, n_boot=0))
    t_boot, boot_report = best_of(
        args.repeat, lambda: report_from_encoded(enc, n_boot=args.boot, seed=args.seed)
    )
    # binary vector per label, then the whole set (its bitmask) as one category
    vectors = [(mask_a >> i & 1, mask_b >> i & 1) for i in range(len(CODES))]
    vectors.append((mask_a, mask_b))
    t_sklearn, kappas = best_of(args.repeat, lambda: sklearn_loop(vectors))

    pair = report["pairs"]["alice|bob"]
    ours = [pair["per_label_kappa"][c] for c in CODES] + [pair["cohen_kappa"]]
    worst = max(abs(x - y) for x, y in zip(ours, kappas, strict=True))
    assert worst <= 1e-9, f"report differs from sklearn by {worst}"

    tracemalloc.start()
    report_from_encoded(enc, n_boot=args.boot, seed=args.seed)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"encode (DataFrame -> arrays)          {t_encode * 1000:9.1f} ms")
    print(f"report, no bootstrap                  {t_report * 1000:9.1f} ms")
    print(f"report + bootstrap ({args.boot} resamples)    {t_boot * 1000:9.1f} ms")
    print(f"sklearn loop (9 labels + set)         {t_sklearn * 1000:9.1f} ms")
    print(f"speed-up, report vs sklearn loop      {t_sklearn / t_report:9.1f} x")
    print(f"speed-up, encode + report vs sklearn  {t_sklearn / (t_encode + t_report):9.1f} x")
    print(f"max |report - sklearn| over the 10 kappas: {worst:.2e}")
    print(f"peak traced memory, report + bootstrap (tracemalloc): {traced_peak / 2**20:.1f} MiB")
    print(f"peak RSS of the process (ru_maxrss):                  {maxrss_mb:.1f} MiB")
    group = boot_report["groups"]["students"]
    print(f"group cohen_kappa {group['cohen_kappa']:.4f}, 95% CI {group['cohen_kappa_ci']}")


if __name__ == "__main__":
    main()
