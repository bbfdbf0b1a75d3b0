"""Database rows to Arrow tables (the gold export's). PostgreSQL hands a query's rows over
with COPY ... TO STDOUT (CSV), which pyarrow parses in C: no Python object is made per
value, the straight path for a million cards. SQLite (development, tests) goes through the
ORM's rows; both give the same table."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
from django.db import connection
from django.db.models import QuerySet

from .sql import copy_out_csv


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
