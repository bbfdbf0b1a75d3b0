"""docs/method.md's "A new study from the command line", run as written on a generated corpus:
the documented path sets up the study it says (lead, groups of the right kinds, moderators,
disjoint draws: 40 + 40 + 149 and the rest)."""

from __future__ import annotations

import json
import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Conversation, Group, Kind, Membership, Role, Study

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

METHOD = Path(__file__).resolve().parents[2] / "docs" / "method.md"


def quick_path() -> list[list[str]]:
    text = METHOD.read_text(encoding="utf-8")
    section = text[text.index("## A new study from the command line") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)[1]
    return [shlex.split(line, comments=True)[2:] for line in block.splitlines() if line.strip()]


def corpus(folder: Path, n: int) -> None:
    folder.mkdir()
    with (folder / "chats.jsonl").open("w") as f:
        for i in range(n):
            messages = [
                {"role": "user", "content": f"Fix my Python function number {i}, please"},
                {"role": "assistant", "content": f"```python\ndef f{i}():\n    return {i}\n```"},
                {"role": "user", "content": "Now add a Python test for it"},
                {"role": "assistant", "content": "```python\ndef test_f():\n    assert f()\n```"},
            ]
            f.write(json.dumps({"id": f"c{i}", "messages": messages}) + "\n")


EXAMPLE = {
    "turns": [
        {"user": "Fix my parser", "assistant": "Here"},
        {"user": "Now a poem", "assistant": "Ok"},
    ],
    "splits": [{"before_turn": 2, "reason": "a new task"}],
}


def test_the_documented_quick_path_sets_up_the_study_it_describes(
    tmp_path, monkeypatch, fake_model
):
    corpus(tmp_path / "wildchat", 900)
    (tmp_path / "examples.jsonl").write_text(json.dumps(EXAMPLE) + "\n", encoding="utf-8")
    # the model leaves every conversation whole (tests/model_stub.py's endpoint)
    fake_model.answer = lambda body: '{"splits": [], "drop_turns": []}'
    monkeypatch.chdir(tmp_path)
    for args in quick_path():
        call_command(*args, stdout=StringIO(), stderr=StringIO())
        if args[0] == "create_group" and args[2] == "experts-a":
            # "and -b of each": the page's comment, done here
            call_command(
                "create_group",
                "smells",
                "experts-b",
                "--kind",
                "expert",
                "--phase",
                "open_sort",
                stdout=StringIO(),
            )
        if args[0] == "create_group" and args[2] == "students-a":
            call_command(
                "create_group", "smells", "students-b", "--kind", "student", stdout=StringIO()
            )
    study = Study.objects.get(slug="smells")
    ada = Membership.objects.get(study=study, user__username="ada")
    assert (ada.role, ada.kind) == (Role.LEAD, Kind.EXPERT)  # and students-a's moderator
    groups = {g.name: g for g in Group.objects.filter(study=study)}
    assert groups["experts-a"].kind == Kind.EXPERT and groups["experts-a"].open_sorting
    assert groups["students-a"].kind == Kind.STUDENT and not groups["students-a"].open_sorting
    assert set(groups["experts-a"].annotators.values_list("username", flat=True)) == {"bea", "cy"}
    assert groups["students-a"].moderator == ada.user
    assert groups["students-b"].moderator.username == "max"
    assert Membership.objects.get(study=study, user__username="bea").kind == Kind.EXPERT
    counts = {name: g.conversations.count() for name, g in groups.items()}
    in_set = Conversation.objects.filter(study=study).in_set().count()
    assert counts["experts-a"] == counts["experts-b"] == 40 and counts["students-a"] == 149
    assert sum(counts.values()) == in_set  # disjoint, and every one of the sample
    assert counts["students-b"] == in_set - 229 > 0
    # the splitting asked about every conversation, as the study ran it, and the split check
    # drew from its entries
    asked = fake_model.requests
    assert len(asked) == 900 and {r["temperature"] for r in asked} == {1.0}
    assert Conversation.objects.filter(study__slug="smells-split-check").exists()
