"""ConvCodeBench (ConvCodeWorld/convcodebench), FORMATS.md section 8: a Parquet file of one
row (or its JSON / JSONL export) with one column per feedback setting, each
`{"ITER=k": {task_id: [...], previous_code: [...], compilation_feedback: [...],
execution_feedback: [...], verbal_feedback: [...], label: [...]}}`, the lists parallel.

One conversation per (setting, task_id), id `<setting>/<task_id>`
(`CF_SEF/BigCodeBench/123`). ITERs are joined by task_id, never by list position, and a task
may be missing from some ITERs. What is inferred (the dataset documents none of it):
- turn 1's user message is the task's instruction, which is not in the dataset: without a
  BigCodeBench file it is the placeholder `[BigCodeBench/123: task instruction not in
  ConvCodeBench]`, with a warning. `import_files(..., options={"bigcodebench": path})`
  (`import_conversations --bigcodebench FILE`) takes it from a bigcode/bigcodebench export
  (JSONL, JSON or Parquet, gzip too): its `instruct_prompt`, else `complete_prompt`;
- each ITER's `previous_code` is the assistant's reply; its compilation, execution and
  verbal feedback, joined by blank lines (the empty ones left out), is the next user
  message, so the last ITER's feedback is a turn with no reply (`reply_missing`);
- `label` is kept on the turn as it is (its meaning, pass/fail of previous_code, is not
  verified)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import Message, Record, RecordError
from .containers import GzipError, jsonable, parquet_error, parquet_file, seekable_copy
from .readers import read_items as read_records
from .records import Item, row_problem
from .sniff import CONVCODEBENCH_SETTINGS, detect_container

NAME = "convcodebench"
UNIQUE_IDS = True

LISTS = ("previous_code", "compilation_feedback", "execution_feedback", "verbal_feedback")
FEEDBACK = (
    ("compilation_feedback", "compilation"),
    ("execution_feedback", "execution"),
    ("verbal_feedback", "verbal"),
)
PROMPT_FIELDS = ("instruct_prompt", "complete_prompt")


def record_id(obj: Any) -> str | None:
    if isinstance(obj, dict) and "setting" in obj and "task_id" in obj:
        return f"{obj['setting']}/{obj['task_id']}"
    return None


def placeholder(task_id: str) -> str:
    return f"[{task_id}: task instruction not in ConvCodeBench]"


# --- reading --------------------------------------------------------------------------------


def read_items(path: str | Path, container: str, options: dict) -> Iterator[Item]:
    """One Item per (setting, task): obj = {setting, task_id, iterations, instruction}."""
    prompts, problem = load_instructions(options.get("bigcodebench"))
    for item in _rows(path, container):
        if item.error is not None:
            yield item
            continue
        if not isinstance(item.obj, dict):
            item.error = f"record is a {type(item.obj).__name__}, not an object"
            yield item
            continue
        for setting in CONVCODEBENCH_SETTINGS:
            if setting not in item.obj:
                continue
            try:
                tasks = _tasks(item.obj[setting], setting)
            except RecordError as exc:
                yield _at(item, error=str(exc))
                continue
            for task_id, iterations in tasks.items():
                obj = {
                    "setting": setting,
                    "task_id": task_id,
                    "iterations": iterations,
                    "instruction": prompts.get(task_id),
                    "instruction_problem": problem,
                    "instructions_given": bool(prompts),
                }
                yield _at(item, obj=obj)


def _at(item: Item, obj: Any = None, error: str | None = None) -> Item:
    return Item(item.line, item.index, obj=obj, error=error, offset=item.offset, row=item.row)


def _rows(path: str | Path, container: str) -> Iterator[Item]:
    """The dataset's rows (one, normally). A Parquet row is read one setting column at a
    time: the row is the whole dataset."""
    if container != "parquet":
        yield from read_records(path, container)
        return
    try:
        with seekable_copy(path) as plain:
            pf = parquet_file(plain)
            settings = [s for s in CONVCODEBENCH_SETTINGS if s in pf.schema_arrow.names]
            for row in range(pf.metadata.num_rows):
                for setting in settings:
                    # read per column, so only one setting's lists are in memory at a time
                    value = pf.read(columns=[setting]).column(0)[row].as_py()
                    obj = {setting: jsonable(value)}
                    problem = row_problem(obj)
                    if problem is not None:
                        yield Item(None, None, error=problem, row=row)
                    else:
                        yield Item(None, None, obj=obj, row=row)
    except GzipError:
        raise
    except (OSError, ValueError) as exc:
        yield Item(None, None, error=parquet_error(exc), row=0)


def _iteration_number(key: str, setting: str) -> int:
    number = key.removeprefix("ITER=")
    if number == key or not number.isdigit():
        raise RecordError(f"field '{setting}.{key}' is not named ITER=<n>")
    return int(number)


def _tasks(value: Any, setting: str) -> dict[str, list[dict]]:
    """{task_id: [{iter, previous_code, ..., label}, ...]} in ITER order, joined by task_id."""
    if not isinstance(value, dict):
        raise RecordError(f"field {setting!r} is a {type(value).__name__}, not an object")
    tasks: dict[str, list[dict]] = {}
    numbered = sorted((_iteration_number(k, setting), k) for k, v in value.items())
    for number, key in numbered:
        columns = value[key]
        where = f"{setting}.{key}"
        if columns is None:
            continue  # an ITER no task reached (Parquet fills absent struct fields with null)
        if not isinstance(columns, dict):
            raise RecordError(f"field {where!r} is a {type(columns).__name__}, not an object")
        task_ids = columns.get("task_id")
        if not isinstance(task_ids, list):
            raise RecordError(f"field '{where}.task_id' is missing or not a list")
        lists = {}
        for name in (*LISTS, "label"):
            values = columns.get(name)
            if values is None:
                values = [None] * len(task_ids)
            if not isinstance(values, list) or len(values) != len(task_ids):
                length = len(values) if isinstance(values, list) else type(values).__name__
                raise RecordError(
                    f"field '{where}.{name}' has {length} entries, task_id has {len(task_ids)}"
                )
            lists[name] = values
        for i, task_id in enumerate(task_ids):
            if not isinstance(task_id, str) or not task_id:
                raise RecordError(f"field '{where}.task_id[{i}]' is not a task id")
            entry = {"iter": number, **{name: lists[name][i] for name in lists}}
            tasks.setdefault(task_id, []).append(entry)
    return tasks


def load_instructions(path: str | Path | None) -> tuple[dict[str, str], str | None]:
    """({task_id: instruction}, a problem or None) from a bigcode/bigcodebench export. The
    full benchmark is 1,140 tasks: it is held in memory."""
    if not path:
        return {}, None
    try:
        container = detect_container(path)
    except OSError as exc:
        return {}, f"cannot read the BigCodeBench file {path} ({exc})"
    if container not in ("jsonl", "array", "object", "parquet"):
        return {}, f"the BigCodeBench file {path} is not JSONL, a JSON array or Parquet"
    prompts: dict[str, str] = {}
    items = read_records(path, container)
    try:
        for item in items:
            obj = item.obj
            if not isinstance(obj, dict) or not isinstance(obj.get("task_id"), str):
                continue
            text = next((obj[k] for k in PROMPT_FIELDS if isinstance(obj.get(k), str)), None)
            if text is not None:
                prompts.setdefault(obj["task_id"], text)
    except GzipError as exc:
        return {}, f"cannot read the BigCodeBench file {path} ({exc})"
    finally:
        items.close()
    if not prompts:
        return {}, f"the BigCodeBench file {path} has no task_id with an instruct_prompt"
    return prompts, None


# --- one (setting, task) as a conversation --------------------------------------------------


def _setting_metadata(setting: str) -> dict:
    """What the setting's name says (CF: compilation feedback, EF_UNIT / EF_FULL: execution
    feedback on partial / full tests, SNF / SEF: simulated novice / expert verbal feedback)."""
    return {
        "compilation_feedback": "CF" in setting.split("_"),
        "execution_feedback": "unit" if "EF_UNIT" in setting else "full" if "EF_FULL" in setting
        else None,
        "verbal_feedback": "expert" if setting.endswith("SEF") else "novice",
    }  # fmt: skip


def parse(obj: Any, fallback_id: str) -> Record:
    setting, task_id = obj["setting"], obj["task_id"]
    record = Record(external_id=f"{setting}/{task_id}", messages=[])
    instruction = obj.get("instruction")
    if instruction is None:
        instruction = placeholder(task_id)
        if obj.get("instruction_problem"):
            why = obj["instruction_problem"]
        elif obj.get("instructions_given"):
            why = f"{task_id} is not in the BigCodeBench file"
        else:
            why = "no BigCodeBench file was given (--bigcodebench FILE)"
        record.warnings.append(f"turn 1's user message is a placeholder: {why}")
    record.messages.append(Message("user", instruction, metadata={"task_id": task_id}))
    for entry in obj["iterations"]:
        where = f"{setting}.ITER={entry['iter']}"
        code = entry["previous_code"]
        if code is not None and not isinstance(code, str):
            raise RecordError(f"field '{where}.previous_code' of {task_id} is not a string")
        metadata = {"iter": entry["iter"], "label": entry["label"]}
        record.messages.append(
            Message("assistant", code or "", missing=code is None, metadata=metadata)
        )
        texts, kinds = [], []
        for key, kind in FEEDBACK:
            value = entry[key]
            if value is not None and not isinstance(value, str):
                raise RecordError(f"field '{where}.{key}' of {task_id} is not a string")
            if value and value.strip():
                texts.append(value)
                kinds.append(kind)
        if texts:
            feedback = {"feedback_iter": entry["iter"], "feedback": kinds}
            record.messages.append(Message("user", "\n\n".join(texts), metadata=feedback))
    record.metadata = {
        "setting": setting,
        "task_id": task_id,
        "iterations": [e["iter"] for e in obj["iterations"]],
        "instruction": "placeholder" if obj.get("instruction") is None else "bigcodebench",
        **_setting_metadata(setting),
    }
    return record
