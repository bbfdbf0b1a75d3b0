"""Conversation importers (FORMATS.md). The public API:

    from annotation.importers import import_files, ImportReport
    report = import_files(study, paths, fmt="auto", progress=None, display_names=None)

Every file is streamed (JSONL line by line, JSON arrays element by element) and written in
batches, so memory stays flat whatever the file size. A bad record is skipped and reported
as `file:line: reason` (`file[index] (id=...): reason` in a JSON array); the rest is
imported."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from . import lmsys, native, openai, sharegpt, wildchat
from .base import BuiltConversation, ImportReport, RecordError, build_conversation
from .readers import Item, read_items
from .sniff import detect_container, sniff_file
from .writer import Writer, display_name

__all__ = ["FORMATS", "ImportReport", "RecordError", "import_files"]

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (native, openai, sharegpt, wildchat, lmsys)}


# Column sizes of Conversation.external_id and .source_file.
MAX_ID_LENGTH = 255
MAX_NAME_LENGTH = 500


def import_files(
    study,
    paths: list[str | Path],
    fmt: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    display_names: dict | None = None,
    job=None,
) -> ImportReport:
    """Import conversation files into `study`. `fmt` is "auto" (sniff each file) or a name
    from FORMATS. `progress(done_bytes, total_bytes)` is called once per written batch.
    `display_names` maps a path to the name errors should use (uploads live in temp files).
    `job`: the import Job writing, stored on each conversation (invisible until it is done).
    A record whose fingerprint the study already holds is skipped (writer.py)."""
    if fmt != "auto" and fmt not in FORMATS:
        known = ", ".join(["auto", *FORMATS])
        raise ValueError(f"unknown format {fmt!r} (known: {known})")
    report = ImportReport()
    sizes = {str(p): _size(p) for p in paths}
    total = sum(sizes.values())
    done_before = 0  # bytes of the files already finished
    position = 0  # bytes read of the current file

    def report_progress() -> None:
        if progress is not None:
            progress(min(done_before + position, total), total)

    writer = Writer(study, report, on_flush=report_progress, job=job)
    for path in paths:
        name = display_name(path, display_names)
        position = 0
        for item in _file_items(path, name, fmt, writer, report):
            position = item.offset
        writer.flush()  # a file's records are all in the database before the next starts
        done_before += sizes[str(path)]
        position = 0
    report_progress()
    return report


def _size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _file_items(path, name: str, fmt: str, writer: Writer, report: ImportReport):
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
    if container not in ("jsonl", "array"):
        what = "Markdown" if container == "markdown" else "neither JSON Lines nor a JSON array"
        if fmt == "auto":
            sniffed, _ = sniff_file(path, container) if container == "markdown" else (None, "")
            if sniffed:
                what = f"a {sniffed} export"
        report.file_error(name, f"cannot import: the file is {what}; nothing imported from it")
        return
    if fmt == "auto":
        sniffed, reason = sniff_file(path, container)
        if sniffed not in FORMATS:
            why = f"it looks like {sniffed}, which has no importer" if sniffed else reason
            report.file_error(name, f"cannot recognise the format ({why}); nothing imported")
            return
        fmt = sniffed
    module = FORMATS[fmt]
    report.files += 1
    writer.containers[name] = container
    short = Path(name).name
    items = read_items(path, container)
    try:
        for item in items:
            yield item
            conversation = _build(item, name, short, container, module, report)
            if conversation is not None:
                writer.add(conversation)
    finally:
        items.close()


def _location(item: Item, name: str, module: ModuleType) -> str:
    if item.index is None:
        return f"{name}:{item.line}"
    record_id = module.record_id(item.obj) if item.obj is not None else None
    return f"{name}[{item.index}]" + (f" (id={record_id})" if record_id is not None else "")


def _build(
    item: Item, name: str, short: str, container: str, module: ModuleType, report: ImportReport
) -> BuiltConversation | None:
    location = _location(item, name, module)
    if item.error is not None:
        report.reject(location, item.error)
        return None
    position = item.line if item.index is None else item.index
    fallback_id = f"{short}:{item.line}" if item.index is None else f"{short}[{item.index}]"
    try:
        record = module.parse(item.obj, fallback_id)
        if len(record.external_id) > MAX_ID_LENGTH:
            raise RecordError(f"id is longer than {MAX_ID_LENGTH} characters")
        system_prompt, preamble, turns, warnings = build_conversation(record)
    except RecordError as exc:
        report.reject(location, str(exc))
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
