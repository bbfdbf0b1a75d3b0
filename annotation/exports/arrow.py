"""The few Arrow table operations the gold export is built from (its tables come from the
database through annotation/db/arrow.py's read_table)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TIMESTAMP = pa.timestamp("us", tz="UTC")


def iso(timestamps) -> pa.Array:
    """TIMESTAMP values as datetime.isoformat() writes an aware UTC datetime:
    2025-01-01T12:00:00+00:00, with .ffffff only when there are microseconds. Each
    distinct value is formatted once (numpy's formatting: Arrow's strftime is slower)."""
    encoded = pc.dictionary_encode(flat(timestamps))
    values = encoded.dictionary
    micros = pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False)
    at = micros.astype("datetime64[us]")
    text = np.datetime_as_string(at, unit="us")
    whole = micros % 1_000_000 == 0
    text[whole] = np.datetime_as_string(at[whole], unit="s")
    formatted = pc.binary_join_element_wise(pa.array(text, pa.string()), "+00:00", "")
    return formatted.take(encoded.indices)


def code_lists(links: pa.Table) -> pa.Table:
    """(id, code) rows, each an owner's link to one of its types, as (id, codes): an owner's
    codes sorted as Python sorts them (Arrow compares strings as UTF-8 bytes: code point
    order)."""
    ordered = links.sort_by([("id", "ascending"), ("code", "ascending")])
    ids = ordered["id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else ids
    offsets = pa.array(np.append(starts, len(ids)), pa.int32())
    codes = pa.ListArray.from_arrays(offsets, flat(ordered["code"]))
    return pa.table({"id": ordered["id"].take(starts), "codes": codes})


def with_codes(owners: pa.Table, sets: pa.Table) -> pa.Table:
    """`owners` (labels, consensus, study gold) with `codes` from code_lists' `sets`: [] for
    an owner with no link, "no smell"."""
    codes = sets["codes"].take(positions(owners["id"], sets, "id"))
    return owners.append_column("codes", pc.fill_null(codes, pa.scalar([], codes.type)))


def flat(values):
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def positions(keys, table: pa.Table, column: str) -> pa.Array:
    """For each key, the index of the row of `table` whose `column` equals it (null where
    none): `table.take(positions(...))` is a left join on a unique key that keeps the
    order of `keys`."""
    return pc.index_in(keys, value_set=table[column].combine_chunks())
