"""The array paths the agreement job takes (encode_axes, Reference, the binary COPY reader)
give what the label-set paths give."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pandas as pd
import pytest

from annotation.agreement import rows as rows_module
from annotation.agreement.extras import build_extras, extras_from_encoded
from annotation.agreement.stats import (
    Reference,
    agreement_report,
    encode,
    encode_axes,
    report_from_encoded,
)
from annotation.agreement.versus import versus_encoded, versus_reference
from annotation.db import columns as columns_module

from .factories import CODES, make_records

GROUPS = {"g1": ["alice", "bob", "carol", "dave"], "g2": ["erin", "frank"]}


def arrays_of(records: pd.DataFrame, codes: list[str], shuffle_seed: int | None = None):
    """The records as encode_axes takes them: integer card ids, name indices, bitmasks;
    shuffled rows, and name lists in another order than the sorted one."""
    if shuffle_seed is not None:
        records = records.sample(frac=1, random_state=shuffle_seed)
    card_ids, _ = pd.factorize(records["card"])
    card = card_ids.astype(np.int64) * 1000 + 3  # sparse ids: encode keeps their order
    annotators = sorted(set(records["annotator"]), reverse=True) + ["nobody"]
    groups = sorted(set(records["group"]), reverse=True)
    annotator = np.array([annotators.index(a) for a in records["annotator"]])
    group = np.array([groups.index(g) for g in records["group"]])
    bit = {c: 1 << i for i, c in enumerate(codes)}
    mask = np.array([sum(bit[c] for c in labels) for labels in records["labels"]], np.uint64)
    as_ids = records.assign(card=card)
    return as_ids, card, annotator, annotators, group, groups, mask


def assert_same_encoding(a, b) -> None:
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray | pd.Index):
            assert np.array_equal(np.asarray(x), np.asarray(y)), field.name
        else:
            assert x == y, field.name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_encode_axes_gives_what_encode_gives_for_the_same_records(seed):
    records = make_records(seed, GROUPS, n_cards=60)
    as_ids, card, annotator, annotators, group, groups, mask = arrays_of(records, CODES, seed)
    encoded = encode_axes(
        {"x": CODES, "y": CODES[::-1]},
        card,
        annotator,
        annotators,
        group,
        groups,
        {"x": mask, "y": mask},
    )
    assert_same_encoding(encoded["x"], encode(as_ids.sort_values("card"), CODES))
    # another axis: the same records, its own bit order
    assert encoded["y"].codes == CODES[::-1]
    assert np.array_equal(encoded["y"].card, encoded["x"].card)


def test_encode_axes_refuses_what_encode_refuses():
    card, who = np.array([5, 5]), np.array([0, 0])
    with pytest.raises(ValueError, match="card 5: two records of annotator 'alice'"):
        encode_axes({"x": CODES}, card, who, ["alice"], who, ["g"], {"x": np.zeros(2, np.uint64)})
    with pytest.raises(ValueError, match="reserved for pair keys"):
        encode_axes({"x": CODES}, card[:1], who[:1], ["a|b"], who[:1], ["g"], {"x": card[:1]})
    with pytest.raises(ValueError, match="at most 64 label codes"):
        many = [f"c{i}" for i in range(65)]
        encode_axes({"x": many}, card[:1], who[:1], ["a"], who[:1], ["g"], {"x": card[:1]})


def test_a_reference_gives_the_numbers_of_its_mapping():
    records = make_records(3, GROUPS, n_cards=50)
    judge = records[records["annotator"] == "alice"].assign(annotator="judge")
    everyone = pd.concat([records, judge], ignore_index=True)
    gold = {card: labels for card, labels in zip(judge["card"], judge["labels"], strict=True)}
    gold.pop(next(iter(gold)))
    reference = Reference.of(gold, CODES)
    enc = encode(records, CODES)
    assert report_from_encoded(enc, reference, n_boot=30) == agreement_report(
        records, CODES, gold, n_boot=30
    )
    assert extras_from_encoded(enc, reference) == build_extras(records, CODES, gold)
    assert versus_encoded(encode(everyone, CODES), reference) == versus_reference(
        everyone, gold, CODES
    )
    empty = Reference.of({}, CODES)
    assert report_from_encoded(enc, empty, n_boot=0) == agreement_report(
        records, CODES, {}, n_boot=0
    )


def copy_binary(columns: list[list[int]], null_at: tuple[int, int] | None = None) -> bytes:
    """PostgreSQL's COPY binary format of bigint columns (no NULL unless `null_at`)."""
    out = [b"PGCOPY\n\xff\r\n\x00", struct.pack(">ii", 0, 4), b"xtra"]  # 4 extension bytes
    for r, row in enumerate(zip(*columns, strict=True)):
        out.append(struct.pack(">h", len(row)))
        for c, value in enumerate(row):
            if (r, c) == null_at:
                out.append(struct.pack(">i", -1))
            else:
                out.append(struct.pack(">iq", 8, value))
    out.append(b"\xff\xff")
    return b"".join(out)


@pytest.mark.parametrize("block", [1, 29, 64, 1 << 20])
def test_the_copy_reader_parses_rows_split_across_blocks(monkeypatch, block):
    monkeypatch.setattr(columns_module, "COPY_BLOCK_BYTES", block)
    rng = np.random.default_rng(block)
    columns = [rng.integers(-(2**40), 2**40, 500).tolist() for _ in range(3)]
    data = copy_binary(columns)
    parser = columns_module._BinaryColumns(3)
    target = parser.target()
    at = 0
    while at < len(data):  # psycopg2 writes a row at a time; any cut must do
        step = int(rng.integers(1, 90))
        target.write(data[at : at + step])
        at += step
    target.flush()
    assert [c.tolist() for c in parser.columns()] == columns


def test_the_copy_reader_refuses_a_null_and_a_cut_stream():
    parser = columns_module._BinaryColumns(2)
    with pytest.raises(ValueError, match="non-null bigint"):
        parser.write(copy_binary([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], null_at=(1, 0)))
    parser = columns_module._BinaryColumns(2)
    parser.write(copy_binary([[1, 2], [3, 4]])[:-5])
    with pytest.raises(ValueError, match="does not end where a row ends"):
        parser.columns()
    parser = columns_module._BinaryColumns(2)
    parser.write(copy_binary([[], []]))
    assert [len(c) for c in parser.columns()] == [0, 0]


@pytest.mark.parametrize("spread", [1, 10**9])
def test_the_id_helpers_give_the_same_on_narrow_and_wide_id_ranges(spread):
    rng = np.random.default_rng(spread)
    ids = rng.integers(0, 50, 300) * spread + 7  # wide: sorted, not counted over the range
    index, distinct = rows_module.rank_ids(ids)
    assert distinct.tolist() == sorted(set(ids.tolist()))
    assert (distinct[index] == ids).all()
    of = np.r_[ids[:20], ids.max() + spread]  # the last one absent
    counts = {i: int((ids == i).sum()) for i in of.tolist()}
    assert rows_module.count_per(ids, of).tolist() == [counts[i] for i in of.tolist()]
    values = distinct * 3
    found = rows_module.value_per(distinct, values, of, missing=-1)
    assert found.tolist() == [3 * i if counts[i] else -1 for i in of.tolist()]
