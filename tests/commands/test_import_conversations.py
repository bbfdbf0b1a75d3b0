from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Conversation


def native(cid: str, *texts: str) -> str:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    return json.dumps({"id": cid, "messages": messages})


def test_it_imports_files_and_prints_a_summary_and_each_rejected_record(study, tmp_path, capsys):
    a = tmp_path / "a.jsonl"
    a.write_text(f"{native('c1', 'q', 'a', 'q2', 'a2')}\n{{oops\n{native('c2', 'q')}\n")
    b = tmp_path / "b.json"
    b.write_text(json.dumps([{"id": "s1", "conversations": [{"from": "robot", "value": "x"}]}]))
    call_command("import_conversations", study.slug, str(a), str(b))
    out, err = capsys.readouterr()
    assert "Imported 2 conversations (3 turns) from 2 file(s); rejected 2 records" in out
    assert f"{a}:2: invalid JSON" in err
    assert f"{b}[0] (id=s1): conversations[0]: unknown role from='robot'" in err
    assert Conversation.objects.filter(study=study).count() == 2


def test_it_fails_when_nothing_could_be_imported(study, tmp_path, capsys):
    path = tmp_path / "a.jsonl"
    path.write_text("{broken\n")
    with pytest.raises(CommandError, match="Nothing could be imported"):
        call_command("import_conversations", study.slug, str(path), "--format", "native")
    assert f"{path}:1: invalid JSON" in capsys.readouterr().err


def test_it_honours_a_forced_format(study, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(native("c1", "q", "a") + "\n")
    call_command("import_conversations", study.slug, str(path), "--format", "openai")
    assert Conversation.objects.get().external_id == "a.jsonl:1"


def test_it_refuses_an_unknown_study(db, tmp_path):
    with pytest.raises(CommandError, match="unknown study 'ghost'.*create_study"):
        call_command("import_conversations", "ghost", str(tmp_path / "a.jsonl"))


def test_it_refuses_an_unknown_format(study, tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'csv'"):
        call_command("import_conversations", study.slug, "a.jsonl", "--format", "csv")
