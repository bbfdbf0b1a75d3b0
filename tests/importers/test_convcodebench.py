"""ConvCodeBench (FORMATS.md section 8): one row, one conversation per (setting, task)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers import import_files
from annotation.models import Conversation
from tests.factories import make_study

from .conftest import stored


def iteration(tasks: list[str], n: int, **override) -> dict:
    columns = {
        "task_id": tasks,
        "previous_code": [f"def f():  # {t} v{n}" for t in tasks],
        "compilation_feedback": ["" for _ in tasks],
        "execution_feedback": [f"{t} v{n}: 2 of 5 tests failed" for t in tasks],
        "verbal_feedback": [f"Handle the empty input ({t})" for t in tasks],
        "label": [False for _ in tasks],
    }
    columns.update(override)
    return columns


def dataset() -> dict:
    a, b = "BigCodeBench/13", "BigCodeBench/7"
    setting = {
        "ITER=1": iteration([a, b], 1),
        "ITER=2": iteration([b, a], 2),  # another order: joined by task_id, not position
        "ITER=3": iteration([a], 3, label=[True]),  # b is done
    }
    return {
        "CF_EF_UNIT_SNF": setting,
        "CF_SEF": {"ITER=1": iteration([a], 1, verbal_feedback=[None])},
    }


def test_it_makes_one_conversation_per_setting_and_task(study, files):
    path = files.json("convcodebench.json", [dataset()])
    report = import_files(study, [path])
    assert (report.conversations, report.rejected, report.errors) == (3, 0, [])
    ids = set(Conversation.objects.values_list("external_id", flat=True))
    assert ids == {
        "CF_EF_UNIT_SNF/BigCodeBench/13",
        "CF_EF_UNIT_SNF/BigCodeBench/7",
        "CF_SEF/BigCodeBench/13",
    }
    c = Conversation.objects.get(external_id="CF_EF_UNIT_SNF/BigCodeBench/13")
    turns = list(c.turns.order_by("index"))
    assert [t.user_text for t in turns] == [
        "[BigCodeBench/13: task instruction not in ConvCodeBench]",
        "BigCodeBench/13 v1: 2 of 5 tests failed\n\nHandle the empty input (BigCodeBench/13)",
        "BigCodeBench/13 v2: 2 of 5 tests failed\n\nHandle the empty input (BigCodeBench/13)",
        "BigCodeBench/13 v3: 2 of 5 tests failed\n\nHandle the empty input (BigCodeBench/13)",
    ]
    assert [t.reply_text for t in turns[:3]] == [
        f"def f():  # BigCodeBench/13 v{n}" for n in (1, 2, 3)
    ]
    assert turns[3].reply_missing
    assert turns[2].metadata["label"] is True and turns[2].metadata["iter"] == 3
    assert turns[1].metadata["feedback"] == ["execution", "verbal"]
    assert c.metadata["iterations"] == [1, 2, 3]
    assert c.metadata["execution_feedback"] == "unit"
    assert c.metadata["verbal_feedback"] == "novice"
    assert c.metadata["instruction"] == "placeholder"
    b = Conversation.objects.get(external_id="CF_EF_UNIT_SNF/BigCodeBench/7")
    assert b.n_turns == 3  # ITER=1, ITER=2, and ITER=2's feedback
    assert b.turns.get(index=2).reply_text == "def f():  # BigCodeBench/7 v2"
    assert f"{path}[0] (id=CF_SEF/BigCodeBench/13): turn 1's user message is a placeholder: " in (
        "\n".join(report.warnings)
    )


def test_it_takes_the_instruction_from_a_bigcodebench_file(study, files):
    bigcodebench = files.jsonl(
        "bigcodebench.jsonl",
        {"task_id": "BigCodeBench/13", "instruct_prompt": "Download all files from an FTP."},
        {"task_id": "BigCodeBench/99", "instruct_prompt": "unused"},
    )
    path = files.parquet("convcodebench.parquet", [dataset()])
    report = import_files(study, [path], options={"bigcodebench": bigcodebench})
    assert report.errors == []
    c = Conversation.objects.get(external_id="CF_SEF/BigCodeBench/13")
    assert c.turns.get(index=1).user_text == "Download all files from an FTP."
    assert c.metadata["instruction"] == "bigcodebench"
    # task 7 is not in the file: its placeholder says so
    assert report.warnings == [
        f"{path} row 0 (id=CF_EF_UNIT_SNF/BigCodeBench/7): turn 1's user message is a "
        "placeholder: BigCodeBench/7 is not in the BigCodeBench file"
    ]


def test_parquet_and_json_give_the_same_conversations(study, files):
    import_files(study, [files.jsonl("c.jsonl", dataset())])
    other = make_study("s2")
    report = import_files(other, [files.parquet("c.parquet", [dataset()])])
    assert report.errors == []
    assert stored(other) == stored(study)


def test_it_names_the_field_of_a_broken_iteration(study, files):
    broken = dataset()
    broken["CF_EF_UNIT_SNF"]["ITER=2"]["previous_code"] = ["only one"]
    path = files.parquet("c.parquet", [broken])
    report = import_files(study, [path])
    # the broken setting is rejected whole; the other one is imported
    assert report.conversations == 1
    assert report.errors == [
        f"{path} row 0: field 'CF_EF_UNIT_SNF.ITER=2.previous_code' has 1 entries, task_id has 2"
    ]


def test_the_command_passes_the_bigcodebench_file(study, files, capsys):
    bigcodebench = files.jsonl(
        "b.jsonl", {"task_id": "BigCodeBench/13", "instruct_prompt": "Do it."}
    )
    path = files.jsonl("c.jsonl", {"CF_SEF": dataset()["CF_SEF"]})
    call_command("import_conversations", study.slug, str(path), "--bigcodebench", str(bigcodebench))
    assert Conversation.objects.get().turns.get(index=1).user_text == "Do it."
    with pytest.raises(CommandError, match="--bigcodebench: no such file"):
        call_command("import_conversations", study.slug, str(path), "--bigcodebench", "nope")


@pytest.mark.parametrize("indent", [2, "\t"])
def test_a_pretty_printed_export_imports_as_its_one_line_copy(study, files, indent):
    """Issue 20, defect 6: one object over many lines (a pretty-printed export) was refused
    as invalid JSON while the same object on one line imported."""
    import json

    import_files(study, [files.jsonl("one-line.json", dataset())])
    other = make_study("s2")
    path = files.raw("pretty.json", json.dumps(dataset(), indent=indent))
    report = import_files(other, [path])
    assert (report.conversations, report.rejected, report.errors) == (3, 0, [])
    assert stored(other) == stored(study)


def test_a_broken_pretty_printed_object_names_its_line(study, files):
    import json

    text = json.dumps(dataset(), indent=2).replace('"ITER=2"', '"ITER=2",', 1)
    report = import_files(study, [files.raw("pretty.json", text)])
    assert report.conversations == 0
    # no record could be read, so its format is not recognised: the file is not read
    assert report.errors == [] and len(report.files_not_read) == 1
    assert "invalid JSON" in report.files_not_read[0]
    line = text[: text.index('"ITER=2",')].count("\n") + 1
    assert f"line {line}" in report.files_not_read[0]
