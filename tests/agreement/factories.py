"""Seeded generators of annotation records for the agreement tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

CODES = ["a", "b", "c", "d", "unused"]


def make_records(
    seed: int,
    groups: dict[str, list[str]],
    n_cards: int = 40,
    used: tuple[str, ...] = ("a", "b", "c", "d"),
    p: float = 0.3,
    agree: float = 0.7,
    missing: float = 0.15,
) -> pd.DataFrame:
    """Cards of each group labelled by its annotators: each annotator copies a card's
    "true" set with probability `agree`, else draws its own; a record is left out with
    probability `missing`. Labels are frozensets of `used` codes (empty sets included)."""
    rng = np.random.default_rng(seed)
    rows = []
    for group, annotators in groups.items():
        for c in range(n_cards):
            truth = frozenset(x for x in used if rng.random() < p)
            for annotator in annotators:
                if rng.random() < missing:
                    continue
                labels = truth
                if rng.random() >= agree:
                    labels = frozenset(x for x in used if rng.random() < p)
                rows.append(
                    {
                        "card": f"{group}-{c}",
                        "annotator": annotator,
                        "group": group,
                        "labels": labels,
                    }
                )
    return pd.DataFrame(rows, columns=["card", "annotator", "group", "labels"])


def records_from(rows: list[tuple]) -> pd.DataFrame:
    """(card, annotator, group, labels) tuples -> records."""
    return pd.DataFrame(
        [(c, a, g, frozenset(labels)) for c, a, g, labels in rows],
        columns=["card", "annotator", "group", "labels"],
    )
