"""build_extras: co-occurrence, per-pair confusion and the taxonomy counts, checked against
numbers computed by hand and by plain Python loops."""

from __future__ import annotations

import json
import random
from itertools import combinations

import pandas as pd
import pytest

from annotation.agreement.extras import build_extras

CODES = ["a", "b", "c"]


def _records(rows):
    return pd.DataFrame(
        [dict(card=c, annotator=w, group=g, labels=frozenset(s)) for c, w, g, s in rows]
    )


def small():
    return _records(
        [
            (1, "alice", "G1", {"a"}),
            (1, "bob", "G1", {"a", "b"}),
            (2, "alice", "G1", set()),
            (2, "bob", "G1", {"c"}),
            (3, "alice", "G1", {"b"}),
            (3, "bob", "G1", {"b"}),
            (4, "bob", "G1", {"b"}),  # alice has no record: not a common card
        ]
    )


def test_it_counts_cooccurrence_over_consensus():
    extras = build_extras(small(), CODES, {1: {"a", "b"}, 2: set(), 3: {"b"}})
    cooc = extras["cooccurrence"]
    assert cooc["source"] == "consensus"
    assert cooc["n_sets"] == 3
    assert cooc["codes"] == CODES
    assert cooc["matrix"] == [[1, 1, 0], [1, 2, 0], [0, 0, 0]]


def test_it_counts_cooccurrence_over_records_without_consensus():
    cooc = build_extras(small(), CODES, {})["cooccurrence"]
    assert cooc["source"] == "records"
    assert cooc["n_sets"] == 7
    # a: 2 records; b: 4 (one with a); c: 1
    assert cooc["matrix"] == [[2, 1, 0], [1, 4, 0], [0, 0, 1]]


def test_it_builds_the_pair_confusion_by_hand():
    pair = build_extras(small(), CODES, None)["confusion"]["alice|bob"]
    assert pair["n_common_cards"] == 3
    # card 1: a x {a, b}; card 3: b x b; card 2: nothing x c
    assert pair["labels"] == [[1, 1, 0], [0, 1, 0], [0, 0, 0]]
    assert pair["a_empty"] == [0, 0, 1]
    assert pair["b_empty"] == [0, 0, 0]
    assert pair["both_empty"] == 0
    # [[both absent, only bob], [only alice, both]]
    assert pair["per_label"] == {
        "a": [[2, 0], [0, 1]],
        "b": [[1, 1], [0, 1]],
        "c": [[2, 1], [0, 0]],
    }


def test_it_counts_the_taxonomy_table():
    table = build_extras(small(), CODES, {1: {"a", "b"}, 2: set(), 3: {"b"}})["taxonomy_table"]
    assert table["n_cards"] == 3
    assert table["n_instances"] == 3
    assert table["rows"] == [
        {"code": "a", "count": 1, "share": 1 / 3, "share_of_cards": 1 / 3},
        {"code": "b", "count": 2, "share": 2 / 3, "share_of_cards": 2 / 3},
        {"code": "c", "count": 0, "share": 0.0, "share_of_cards": 0.0},
    ]


def test_it_reports_null_shares_with_a_reason_without_consensus():
    table = build_extras(small(), CODES, {})["taxonomy_table"]
    row = table["rows"][0]
    assert row["count"] == 0 and row["share"] is None and row["share_of_cards"] is None
    assert row["share_reason"].startswith("undefined:")
    # consensus of only empty sets: share of instances is 0/0, share of cards is 0
    table = build_extras(small(), CODES, {1: set()})["taxonomy_table"]
    assert table["rows"][0]["share"] is None and table["rows"][0]["share_of_cards"] == 0.0


def test_it_pairs_annotators_only_within_groups():
    records = _records(
        [
            (1, "alice", "G1", {"a"}),
            (1, "bob", "G1", {"a"}),
            (2, "charlie", "G2", {"b"}),
            (2, "dave", "G2", set()),
        ]
    )
    extras = build_extras(records, CODES, None)
    assert sorted(extras["confusion"]) == ["alice|bob", "charlie|dave"]
    assert extras["pairs_by_group"] == {"G1": ["alice|bob"], "G2": ["charlie|dave"]}
    assert extras["confusion"]["charlie|dave"]["b_empty"] == [0, 1, 0]


def test_it_rejects_an_unknown_code_naming_the_row():
    records = _records([(1, "alice", "G1", {"zzz"})])
    with pytest.raises(ValueError, match="row 0.*'zzz'"):
        build_extras(records, CODES, None)


def _loops(rows, codes, consensus):
    """The same numbers with plain Python loops over cards."""
    sets = list(consensus.values()) if consensus else [set(labels) for *_, labels in rows]
    cooc = [[sum(1 for s in sets if a in s and b in s) for b in codes] for a in codes]
    by = {}
    groups = {}
    for card, who, group, labels in rows:
        by.setdefault(who, {})[card] = set(labels)
        groups.setdefault(group, set()).add(who)
    confusion = {}
    for members in groups.values():
        for a, b in combinations(sorted(members), 2):
            common = sorted(set(by[a]) & set(by[b]))
            la = [by[a][c] for c in common]
            lb = [by[b][c] for c in common]
            ab = list(zip(la, lb, strict=True))
            confusion[f"{a}|{b}"] = {
                "n_common_cards": len(common),
                "labels": [
                    [sum(1 for x, y in ab if r in x and c in y) for c in codes] for r in codes
                ],
                "a_empty": [sum(1 for x, y in ab if not x and c in y) for c in codes],
                "b_empty": [sum(1 for x, y in ab if r in x and not y) for r in codes],
                "both_empty": sum(1 for x, y in ab if not x and not y),
                "per_label": {
                    code: [
                        [
                            sum(1 for x, y in ab if code not in x and code not in y),
                            sum(1 for x, y in ab if code not in x and code in y),
                        ],
                        [
                            sum(1 for x, y in ab if code in x and code not in y),
                            sum(1 for x, y in ab if code in x and code in y),
                        ],
                    ]
                    for code in codes
                },
            }
    return cooc, confusion


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_equals_plain_loops_on_random_data(seed):
    rng = random.Random(seed)
    codes = [f"t{i}" for i in range(6)]
    groups = {"G1": ["alice", "bob", "eve"], "G2": ["charlie", "dave"]}
    rows = []
    for card in range(300):
        group = rng.choice(sorted(groups))
        for who in groups[group]:
            if rng.random() < 0.85:  # some missing records
                labels = {c for c in codes if rng.random() < 0.2}
                rows.append((card, who, group, labels))
    rng.shuffle(rows)
    consensus = {card: {c for c in codes if rng.random() < 0.25} for card in range(0, 300, 2)}
    extras = build_extras(_records(rows), codes, consensus)
    cooc, confusion = _loops(rows, codes, consensus)
    assert extras["cooccurrence"]["matrix"] == cooc
    assert sorted(extras["confusion"]) == sorted(confusion)
    for key, expected in confusion.items():
        got = extras["confusion"][key]
        assert {k: got[k] for k in expected} == expected
    counts = [cooc[i][i] for i in range(len(codes))]
    assert [r["count"] for r in extras["taxonomy_table"]["rows"]] == counts
    assert extras["taxonomy_table"]["n_instances"] == sum(counts)
    json.dumps(extras, allow_nan=False)  # JSON-able as stored in Job.result
