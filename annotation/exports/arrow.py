"""Database rows to Arrow tables, and the few table operations the gold export is built
from. PostgreSQL hands a query's rows over with COPY ... TO STDOUT (CSV), which pyarrow
parses in C: no Python object is made per value, the straight path for a million cards.
SQLite (development, tests) goes through the ORM's rows; both give the same table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from django.db import connection
from django.db.models import QuerySet

from ..db.sql import copy_out_csv

TIMESTAMP = pa.timestamp("us", tz="UTC")


def read_table(queryset: QuerySet, schema: pa.Schema) -> pa.Table:
    """The rows of a `values_list` queryset as a table of `schema`: one field per value, in
    the queryset's order, with the field's type (timestamps as TIMESTAMP)."""
    if connection.vendor != "postgresql":
        rows = list(queryset)
        values = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
        arrays = [pa.array(v, type=f.type) for v, f in zip(values, schema, strict=True)]
        return pa.Table.from_arrays(arrays, schema=schema)
    data = copy_out_csv(queryset)
    if not data.getbuffer().nbytes:
        return schema.empty_table()
    data.seek(0)
    return pacsv.read_csv(
        data,
        read_options=pacsv.ReadOptions(column_names=schema.names, use_threads=False),
        # a text may hold newlines (quoted by COPY)
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=schema,
            # COPY's CSV: NULL is an empty field, the empty string a quoted one ("")
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["t"],
            false_values=["f"],
        ),
    ).cast(schema)


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
