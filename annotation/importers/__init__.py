"""Conversation importers (FORMATS.md). The public API:

    from annotation.importers import import_files, ImportReport
    report = import_files(study, paths, fmt="auto", progress=None, display_names=None,
                          keep=None, dry_run=False)

Every file is streamed (JSONL line by line, JSON arrays element by element, Parquet a batch
of rows at a time; gzip-compressed too) and written in batches, so memory stays flat
whatever the file size. A bad record is skipped and reported as `file:line: reason`
(`file[index] (id=...): reason` in a JSON array, `file row N: reason` in Parquet); the rest
is imported.

A format module may define `read_items(path, container, options)` when its records are not
one per line or row (SWE-chat groups rows into sessions, ConvCodeBench unpacks one row into
conversations); `options` come from `import_files(..., options=...)`."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from ..db.options import WriterOptions
from . import (
    claude_code,
    codex,
    convcodebench,
    lmsys,
    native,
    openai,
    sharegpt,
    specstory,
    swechat,
    wildbench,
    wildchat,
)
from .base import BuiltConversation, ImportReport, Record, RecordError, build_conversation
from .containers import GzipError
from .folders import expand_paths
from .readers import disk_size, read_items
from .records import Item
from .sniff import detect_container, sniff_file
from .writer import Writer, display_name

__all__ = ["FORMATS", "IMPORT_FORMATS", "ImportReport", "RecordError", "import_files"]

FORMATS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (native, openai, sharegpt, wildchat, lmsys, wildbench, swechat, convcodebench)
}
# Whole-file formats: one file is one conversation (a module flag WHOLE_FILE, a parse_file).
FORMATS.update({m.NAME: m for m in (specstory, claude_code, codex)})
# what an import page offers: the formats, or "auto" (sniffed per file)
IMPORT_FORMATS = ["auto", *FORMATS]


# Column sizes of Conversation.external_id and .source_file.
MAX_ID_LENGTH = 255
# the garbage collector's thresholds while files are read (import_files says why)
GC_THRESHOLDS = (50_000, 20, 20)
MAX_NAME_LENGTH = 500


def import_files(
    study,
    paths: list[str | Path],
    fmt: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    display_names: dict | None = None,
    options: dict | None = None,
    keep: Callable[[BuiltConversation], bool] | None = None,
    dry_run: bool = False,
    job=None,
    writer_options: WriterOptions | None = None,
    metadata: dict | None = None,
) -> ImportReport:
    """Import conversation files into `study`. `fmt` is "auto" (sniff each file) or a name
    from FORMATS. A folder stands for the files below it of a kind `fmt` takes (folders.py);
    the others are listed in `report.skipped`. `progress(done_bytes, total_bytes)` is called
    once per written batch.
    `display_names` maps a path to the name errors should use (uploads live in temp files).
    `options` go to the formats that take some (ConvCodeBench: `bigcodebench`, a path).
    `keep(conversation)`: a filter; a conversation it refuses is counted as dropped, never
    written (annotation/intake/coding_filter.py). It judges exactly the records the import
    would otherwise take: not the rejected ones (bad, or a duplicate id), nor those already
    imported (writer.py). `dry_run`: read, check and count everything, duplicates included,
    and write nothing: the counts are the real run's (ImportReport says how they add up).
    `job`: the import Job writing, stored on each conversation (invisible until it is done).
    `writer_options`: how the writer writes (db/options.py; by default what the connection
    does best: COPY and its writer thread on PostgreSQL).
    `metadata`: keys set on every conversation over what its log says (the lead's
    `modality` and `tool` for a whole import: modality.py).
    A record whose fingerprint the study already holds is skipped (writer.py)."""
    if fmt != "auto" and fmt not in FORMATS:
        known = ", ".join(["auto", *FORMATS])
        raise ValueError(f"unknown format {fmt!r} (known: {known})")
    report = ImportReport(dry_run=dry_run, filtered=keep is not None)
    paths = expand_paths(paths, fmt, FORMATS, report, lambda p: display_name(p, display_names))
    sizes = {str(p): disk_size(p) for p in paths}
    total = sum(sizes.values())
    done_before = 0  # bytes of the files already finished

    def report_progress() -> None:
        # what is in the database: with a writer thread, reading is a batch ahead of it
        if progress is not None:
            progress(min(writer.written, total), total)

    writer = Writer(
        study,
        report,
        on_flush=report_progress,
        dry_run=dry_run,
        job=job,
        keep=keep,
        options=writer_options,
        metadata=metadata,
    )
    collecting = gc.get_threshold()
    # The cyclic garbage collector: every record's parse allocates thousands of objects, so
    # the default thresholds run a full collection (over every object of the process) every
    # couple of thousand records, 15% of the reading side's CPU (benchmarks/import_bench.py).
    # The records hold no cycles (plain dicts, lists and strings, freed by their counts);
    # collections run about seventy times less often while files are read, as before after
    # (process-wide: a worker imports one file set at a time).
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        for path in paths:
            name = display_name(path, display_names)
            for item in _file_items(path, name, fmt, writer, report, options or {}):
                writer.mark = done_before + item.offset
            done_before += sizes[str(path)]
            writer.mark = done_before
            # a file's records are all checked against the database before the next's:
            # the writer thread may still be writing its last batch
            writer.flush()
        writer.wait()
    except BaseException:
        writer.close(failed=True)
        raise
    finally:
        gc.set_threshold(*collecting)
    writer.close()
    writer.written = total
    report_progress()
    return report


_CONTAINER_NAMES = {
    "jsonl": "JSON Lines",
    "array": "a JSON array",
    "object": "one JSON object over many lines",
    "parquet": "Parquet",
    "markdown": "Markdown",
    "unknown": "neither JSON Lines, a JSON array nor Parquet (gzip-compressed or not)",
}


def _file_items(path, name: str, fmt: str, writer: Writer, report: ImportReport, options: dict):
    """Import one file, yielding each item read (so the caller can track progress)."""
    try:
        container = detect_container(path)
    except OSError as exc:
        report.file_error(name, f"cannot read the file ({exc.strerror or exc})")
        return
    if container == "empty":
        report.warn(name, "the file is empty")
        report.files += 1
        return
    if fmt == "auto":
        if container == "unknown":
            what = _CONTAINER_NAMES[container]
            report.file_error(name, f"cannot import: the file is {what}; nothing imported from it")
            return
        try:
            sniffed, reason = sniff_file(path, container)
        except GzipError as exc:
            report.file_error(name, f"cannot read the file ({exc}); nothing imported from it")
            return
        if sniffed not in FORMATS:
            if container == "markdown":
                report.file_error(
                    name, f"cannot import: the file is {reason}; nothing imported from it"
                )
                return
            why = f"it looks like {sniffed}, which has no importer" if sniffed else reason
            report.file_error(name, f"cannot recognise the format ({why}); nothing imported")
            return
        fmt = sniffed
    module = FORMATS[fmt]
    if container not in getattr(module, "CONTAINERS", ("jsonl", "array", "object", "parquet")):
        what = _CONTAINER_NAMES[container]
        report.file_error(
            name, f"cannot import as {fmt}: the file is {what}; nothing imported from it"
        )
        return
    report.files += 1
    writer.containers[name] = container
    if getattr(module, "WHOLE_FILE", False):
        _import_whole_file(path, name, module, writer, report)
        return
    short = Path(name).name
    reader = getattr(module, "read_items", None)
    items = reader(path, container, options) if reader else read_items(path, container)
    try:
        for item in items:
            yield item
            report.read += 1
            conversation = _build(item, name, short, container, module, report)
            if conversation is not None:
                writer.add(conversation)
    except GzipError as exc:  # a reader that must decompress the whole file first
        report.file_error(name, f"cannot read the file ({exc}); nothing imported from it")
    finally:
        items.close()


def _import_whole_file(path, name: str, module: ModuleType, writer: Writer, report: ImportReport):
    """A file that is one conversation (SpecStory, Claude Code, Codex), so one record: its
    bad lines are left out, each a warning `file:line: reason; the line is left out` (the
    record is not rejected for them), the rest kept; a file that gives no turn is rejected
    whole, naming the file."""
    try:
        record, line_errors = module.parse_file(path, Path(name).name)
    except OSError as exc:
        report.file_error(name, f"cannot read the file ({exc.strerror or exc})")
        return
    except RecordError as exc:
        report.read += 1
        report.reject(name, f"{exc}; nothing imported from it")
        return
    report.read += 1
    for line, reason in line_errors:
        report.warn(f"{name}:{line}", f"{reason}; the line is left out")
    conversation = _conversation(record, module, name, name, None, report)
    if conversation is not None:
        # tool output is not in the character count; the file's size bounds it
        conversation.size = max(conversation.size, disk_size(path))
        writer.add(conversation)


def _location(item: Item, name: str, module: ModuleType) -> str:
    if item.index is None and item.row is None:
        return f"{name}:{item.line}"
    record_id = module.record_id(item.obj) if item.obj is not None else None
    place = f"{name} row {item.row}" if item.row is not None else f"{name}[{item.index}]"
    return place + (f" (id={record_id})" if record_id is not None else "")


def _build(
    item: Item, name: str, short: str, container: str, module: ModuleType, report: ImportReport
) -> BuiltConversation | None:
    location = _location(item, name, module)
    if item.error is not None:
        report.reject(location, item.error)
        return None
    if item.row is not None:
        position, fallback_id = item.row, f"{short} row {item.row}"
    elif item.index is None:
        position, fallback_id = item.line, f"{short}:{item.line}"
    else:
        position, fallback_id = item.index, f"{short}[{item.index}]"
    try:
        record = module.parse(item.obj, fallback_id)
    except RecordError as exc:
        report.reject(_relocated(exc, location, name, module, item.obj), str(exc))
        return None
    return _conversation(record, module, name, location, position, report, item.obj)


def _relocated(exc: RecordError, location: str, name: str, module: ModuleType, obj) -> str:
    """Where a record error is: the record's place, or the line, index or row it names."""
    if (exc.line, exc.index, exc.row) == (None, None, None):
        return location
    return _location(Item(exc.line, exc.index, obj=obj, row=exc.row), name, module)


def _conversation(
    record: Record,
    module: ModuleType,
    name: str,
    location: str,
    position: int | None,
    report: ImportReport,
    obj=None,
) -> BuiltConversation | None:
    try:
        if len(record.external_id) > MAX_ID_LENGTH:
            raise RecordError(f"id is longer than {MAX_ID_LENGTH} characters")
        system_prompt, preamble, turns, warnings = build_conversation(record)
    except RecordError as exc:
        report.reject(_relocated(exc, location, name, module, obj), str(exc))
        return None
    for warning in warnings:
        report.warn(location, warning)
    size = len(system_prompt) + sum(len(t.user_text) + len(t.reply_text) for t in turns)
    return BuiltConversation(
        external_id=record.external_id,
        source_format=module.NAME,
        source_file=name[:MAX_NAME_LENGTH],
        source_line=position,
        location=location,
        system_prompt=system_prompt,
        preamble=preamble,
        metadata=record.metadata,
        turns=turns,
        check_duplicate=module.UNIQUE_IDS and record.id_from_data,
        size=size,
        id_from_data=record.id_from_data,
    )
