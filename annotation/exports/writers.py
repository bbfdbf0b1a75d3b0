"""The three file formats. An export hands its rows over in batches, each an Arrow table
of the file's schema (the gold export) or a list of row dicts (the raw export): Parquet
writes a batch as one row group, CSV and JSONL write its rows one by one. The file is
written next to its target under a temporary name and moved into place only when
complete, so a failed export never leaves a partial file that looks finished."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..csv_cells import SafeWriter, neutralise
from .columns import CSV_EMPTY_SET, CSV_SEPARATOR, EXPORT_FORMATS, arrow_schema, is_label_column

Progress = Callable[[int], None] | None


def write(
    batches: Iterable,
    columns: list[str],
    path: Path,
    fmt: str,
    progress: Progress,
    floats: frozenset[str] = frozenset(),
) -> int:
    """Write the batches to `path` as `fmt`; returns the number of rows. `progress(n)` is
    called after rows are handed to the writer (each row in CSV and JSONL, each batch in
    Parquet): the export job's bar. `floats`: the columns of floats (columns.arrow_schema)."""
    if fmt not in WRITERS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
    writer = WRITERS[fmt]
    # Same directory as the target, so os.replace is an atomic rename on one filesystem.
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    try:
        if fmt == "parquet":
            n = _write_parquet(batches, columns, Path(tmp_name), progress, floats)
        else:
            n = writer(batches, columns, Path(tmp_name), progress)
        os.chmod(tmp_name, 0o644)  # mkstemp makes it owner-only; an export is to be shared
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return n


def _rows(batch) -> Iterator[dict]:
    """A batch's rows as dicts; an Arrow table's 1,000 at a time (a dict a row takes far
    more memory than the table)."""
    if isinstance(batch, list):
        yield from batch
        return
    for start in range(0, len(batch), 1000):
        yield from batch.slice(start, 1000).to_pylist()


def _write_jsonl(batches: Iterable, columns: list[str], path: Path, progress: Progress) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for batch in batches:
            for row in _rows(batch):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
                if progress is not None:
                    progress(n)
    return n


def _csv_cell(name: str, value) -> object:
    """A value as its CSV cell: a label set its codes joined (the app's own "-" for the empty
    set is kept: a lone minus is no formula), a boolean true/false, a number as a number,
    any text neutralised (csv_cells: a name, a note or an id may be a formula)."""
    if value is None:
        return ""
    if is_label_column(name):
        return neutralise(CSV_SEPARATOR.join(value)) if value else CSV_EMPTY_SET
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    return neutralise(str(value))


def _write_csv(batches: Iterable, columns: list[str], path: Path, progress: Progress) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        SafeWriter(writer).writerow(columns)
        for batch in batches:
            for row in _rows(batch):
                writer.writerow([_csv_cell(name, row[name]) for name in columns])
                n += 1
                if progress is not None:
                    progress(n)
    return n


def _write_parquet(
    batches: Iterable,
    columns: list[str],
    path: Path,
    progress: Progress,
    floats: frozenset[str] = frozenset(),
) -> int:
    # imported here: pyarrow is heavy and only the exports need it
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(columns, floats)
    n = 0
    with pq.ParquetWriter(path, schema) as writer:
        # one row group per batch keeps memory to a batch's worth of rows
        for batch in batches:
            table = pa.Table.from_pylist(batch, schema=schema) if isinstance(batch, list) else batch
            if not len(table):
                continue
            writer.write_table(table, row_group_size=len(table))
            n += len(table)
            if progress is not None:
                progress(n)
    return n


WRITERS: dict[str, Callable[[Iterable, list[str], Path, Progress], int]] = {
    "csv": _write_csv,
    "jsonl": _write_jsonl,
    "parquet": _write_parquet,
}
