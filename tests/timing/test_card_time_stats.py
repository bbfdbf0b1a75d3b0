"""The lead's statistics of time per card: n, median and p90 (numpy's default linear
percentile) per annotator, per type and per annotator and type, checked against numpy on
random data computed group by group with plain loops."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from annotation import timing

CODES = ["ambiguous_instruction", "code_rollback", "incomplete_instruction", "t4", "t5"]


def random_data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    times, labels = [], []
    for a in range(int(rng.integers(1, 6))):
        annotator = f"annotator{a}"
        for turn in rng.choice(400, size=int(rng.integers(1, 120)), replace=False):
            times.append((annotator, int(turn), int(rng.lognormal(10, 1)) + 1))
            if rng.random() < 0.2:
                continue  # timed, not labelled (yet)
            chosen = rng.choice(CODES, size=int(rng.integers(0, 4)), replace=False)
            labels += [(annotator, int(turn), str(c)) for c in chosen]
            if not len(chosen):
                labels.append((annotator, int(turn), timing.NO_SMELL))
        # labels on cards without a time row count nowhere
        labels.append((annotator, 10_000 + a, CODES[0]))
    times_df = pd.DataFrame(times, columns=["annotator", "turn", "active_ms"])
    return times_df, pd.DataFrame(labels, columns=["annotator", "turn", "type"])


def expected(groups: dict[tuple, list[int]]) -> dict[tuple, tuple[int, float, float]]:
    return {
        k: (len(v), float(np.median(v)), float(np.percentile(v, 90))) for k, v in groups.items()
    }


def as_dict(table: pd.DataFrame, by: list[str]) -> dict[tuple, tuple[int, float, float]]:
    return {
        tuple(row[c] for c in by): (int(row["n"]), row["median_ms"], row["p90_ms"])
        for row in table.to_dict("records")
    }


def assert_same(actual: dict, wanted: dict) -> None:
    assert actual.keys() == wanted.keys()
    for key, stats in wanted.items():
        assert actual[key] == pytest.approx(stats, rel=1e-12), key


@pytest.mark.parametrize("seed", range(8))
def test_the_statistics_match_numpy_group_by_group(seed):
    times, labels = random_data(seed)
    tables = timing.card_time_tables(times, labels)

    by_annotator, by_type, by_both = defaultdict(list), defaultdict(list), defaultdict(list)
    ms = {(a, t): v for a, t, v in times.itertuples(index=False)}
    for a, _turn, v in times.itertuples(index=False):
        by_annotator[(a,)].append(v)
    for a, t, code in labels.itertuples(index=False):
        if (a, t) in ms:
            by_type[(code,)].append(ms[(a, t)])
            by_both[(a, code)].append(ms[(a, t)])

    assert_same(as_dict(tables["annotator"], ["annotator"]), expected(by_annotator))
    assert_same(as_dict(tables["type"], ["type"]), expected(by_type))
    assert_same(as_dict(tables["annotator_type"], ["annotator", "type"]), expected(by_both))
    assert by_type  # the random data did label timed cards


def test_the_percentile_is_numpys_linear_one_on_a_small_case():
    times = pd.DataFrame(
        [("alice", t, ms) for t, ms in enumerate([10_000, 20_000, 30_000, 40_000])],
        columns=["annotator", "turn", "active_ms"],
    )
    labels = pd.DataFrame(columns=["annotator", "turn", "type"])
    row = timing.card_time_tables(times, labels)["annotator"].iloc[0]
    # linear: the 90th percentile sits at position 0.9 * (4 - 1) = 2.7 of the sorted times
    assert (row["n"], row["median_ms"], row["p90_ms"]) == (4, 25_000, 37_000)


def test_no_times_give_empty_tables():
    times = pd.DataFrame(columns=["annotator", "turn", "active_ms"])
    labels = pd.DataFrame(columns=["annotator", "turn", "type"])
    tables = timing.card_time_tables(times, labels)
    assert all(t.empty for t in tables.values())
