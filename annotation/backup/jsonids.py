"""Ids that rows keep inside JSON and paths, remapped on load like foreign keys:
- Job.params: "conversations" (a split job's), "version" (an old version's agreement);
  Job.result: "blind_for_id" (the export's reader); any string naming the job's folder
  in the storage ("imports/<job id>/...", "exports/<job id>/..."), result_file too.
- BoardEvent.before/after: the board's snapshots for undo and redo, keyed by FreeTag and
  BoardType ids, with merged_into_id and board_type_id inside; a freeze's "version".
- ExtractionRun.parameters (a judge run's extraction, issue 21): "judge_run" and
  "validator"'s "judge_run" (JudgeRun ids), "answered_without_episodes" (Conversation ids);
  JudgeRun.params: "extraction_run_id" (an ExtractionRun), "conversation_ids".
`lookup(label, old_id)` gives the new id or None (a row deleted before the dump)."""

from __future__ import annotations

import re
from collections.abc import Callable

Lookup = Callable[[str, int], "int | None"]
FOLDER = re.compile(r"^(imports|exports)/(\d+)(/|$)")

# model label -> the fields remapped after every row is in (they may name later rows)
JSON_FIELDS = {
    "annotation.Job": ("params", "result", "result_file"),
    "annotation.BoardEvent": ("before", "after"),
    "annotation.ExtractionRun": ("parameters",),
    "annotation.JudgeRun": ("params",),
}

# (model label, field) -> {key: (the label of the rows its id or ids name)}; a key may be a
# path into a nested dict ("validator.judge_run")
_IDS = {
    ("annotation.ExtractionRun", "parameters"): {
        "judge_run": "annotation.JudgeRun",
        "validator.judge_run": "annotation.JudgeRun",
        "answered_without_episodes": "annotation.Conversation",
    },
    ("annotation.JudgeRun", "params"): {
        "extraction_run_id": "annotation.ExtractionRun",
        "conversation_ids": "annotation.Conversation",
    },
}


def job_folder(path: str, old_job: int, new_job: int) -> str:
    match = FOLDER.match(path)
    if match and int(match.group(2)) == old_job:
        return f"{match.group(1)}/{new_job}{match.group(3)}{path[match.end() :]}"
    return path


def _walk_strings(value, change: Callable[[str], str]):
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_walk_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: _walk_strings(v, change) for k, v in value.items()}
    return value


def remap_job(field: str, value, old_job: int, new_job: int, lookup: Lookup):
    value = _walk_strings(value, lambda s: job_folder(s, old_job, new_job))
    if field == "params" and isinstance(value, dict):
        if isinstance(value.get("conversations"), list):
            ids = (lookup("annotation.Conversation", int(i)) for i in value["conversations"])
            value["conversations"] = [i for i in ids if i is not None]
        if isinstance(value.get("version"), int):
            value["version"] = lookup("taxonomy.TaxonomyVersion", value["version"])
    if field == "result" and isinstance(value, dict) and value.get("blind_for_id") is not None:
        value["blind_for_id"] = lookup("auth.User", int(value["blind_for_id"]))
    return value


def remap_board(value, lookup: Lookup, reserve: Callable[[str, int], int]):
    """A board snapshot with its ids remapped; an id of a row deleted before the dump gets a
    fresh id of its own (`reserve`), so undoing that deletion recreates it without taking
    another study's row."""
    if not isinstance(value, dict):
        return value

    def new(label: str, old) -> int | None:
        if old is None:
            return None
        return lookup(label, int(old)) or reserve(label, int(old))

    out = dict(value)
    if isinstance(value.get("tags"), dict):
        out["tags"] = {}
        for pk, row in value["tags"].items():
            if isinstance(row, dict):
                row = dict(row)
                if "merged_into_id" in row:
                    row["merged_into_id"] = new("annotation.FreeTag", row["merged_into_id"])
                if "board_type_id" in row:
                    row["board_type_id"] = new("annotation.BoardType", row["board_type_id"])
            out["tags"][str(new("annotation.FreeTag", pk))] = row
    if isinstance(value.get("types"), dict):
        out["types"] = {
            str(new("annotation.BoardType", pk)): row for pk, row in value["types"].items()
        }
    if isinstance(value.get("version"), int):
        out["version"] = lookup("taxonomy.TaxonomyVersion", value["version"])
    return out


def remap_ids(label: str, field: str, value, lookup: Lookup):
    """`value` (a row's JSON `field`) with the ids _IDS names remapped: an id, or a list of
    them (an id of a row not in the study file is dropped from a list, None alone)."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for path, target in _IDS.get((label, field), {}).items():
        *parents, key = path.split(".")
        holder = out
        for parent in parents:
            if not isinstance(holder.get(parent), dict):
                holder = None
                break
            holder[parent] = dict(holder[parent])
            holder = holder[parent]
        if holder is None or holder.get(key) is None:
            continue
        old = holder[key]
        if isinstance(old, list):
            ids = (lookup(target, int(i)) for i in old)
            holder[key] = [i for i in ids if i is not None]
        elif isinstance(old, int) and not isinstance(old, bool):
            holder[key] = lookup(target, old)
    return out
