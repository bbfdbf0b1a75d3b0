"""Folders given to the import: every file below, recursively and in sorted order, whose
kind an importer knows. Hidden files and folders are left out, except a `.specstory`
folder (SpecStory keeps its exports in `.specstory/history/`). A file of no known kind is
skipped and named in the report, never an error: a project folder holds much else."""

from __future__ import annotations

import os
from collections.abc import Callable, Container
from pathlib import Path

from .base import ImportReport
from .containers import GzipError
from .sniff import detect_container, sniff_file

# Hidden folders that are still searched.
VISIBLE_HIDDEN = {".specstory"}


def expand_paths(
    paths: list[str | Path],
    fmt: str,
    known: Container[str],
    report: ImportReport,
    name_of: Callable[[Path], str] = str,
) -> list[str | Path]:
    """The paths with each folder replaced by the files below it worth importing; files named
    on their own stay, whatever they are (their errors are reported as usual)."""
    out: list[str | Path] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        for file in _files_below(Path(path)):
            reason = _why_not(file, fmt, known)
            if reason is None:
                out.append(file)
            else:
                report.skip(name_of(file), reason)
    return out


def _files_below(folder: Path) -> list[Path]:
    """The files below `folder` in the order of their paths' parts (a folder's files and
    subfolders mixed, as `ls -R | sort` would list them)."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") or d in VISIBLE_HIDDEN]
        found += [Path(root, name) for name in files if not name.startswith(".")]
    return sorted(found, key=lambda path: path.relative_to(folder).parts)


def _why_not(path: Path, fmt: str, known: Container[str]) -> str | None:
    """None if the file is of a kind to import, else why it is skipped."""
    try:
        container = detect_container(path)
    except OSError as exc:
        return f"cannot read the file ({exc.strerror or exc})"
    if container == "empty":
        return "the file is empty"
    if container == "unknown":
        return "neither JSON Lines, a JSON array nor Markdown"
    try:
        sniffed, reason = sniff_file(path, container)
    except GzipError as exc:
        return f"cannot read the file ({exc})"
    if sniffed is None:
        # the list of what each format is recognised by is said once, not per skipped file
        return reason.split("; looked for ")[0]
    if sniffed not in known:
        return f"a {sniffed} file, which has no importer"
    if fmt != "auto" and sniffed != fmt:
        return f"a {sniffed} file, not {fmt}"
    return None
