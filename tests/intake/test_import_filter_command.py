"""`import_conversations SLUG FILE --filter coding [--dry-run]`: the filtered import keeps the
conversations the study's rules match and says what it dropped; the dry run writes nothing
and its counts are the real run's."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.intake.coding_filter import default_rules
from annotation.models import Conversation, Turn


def native(cid: str, *texts: str) -> str:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    return json.dumps({"id": cid, "messages": messages})


@pytest.fixture
def chats(tmp_path):
    path = tmp_path / "chats.jsonl"
    lines = [
        native("go", "How do I write a web server in Go?", "Use net/http.", "thanks", "ok"),
        native("lets-go", "The weather is nice, let's go to the beach", "Have fun!"),
        native("py", "Sort a dict in python", "sorted(d.items())"),
        native("poem", "Write a poem about autumn", "Leaves fall..."),
        "{broken",
        native("py", "a duplicate id in python", "rejected as a duplicate"),
        native("fence", "fix this", "```rust\nfn main() {}\n```"),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(study, path, *args):
    call_command("import_conversations", study.slug, str(path), *args)


def test_it_keeps_only_the_coding_conversations_and_says_what_it_dropped(study, chats, capsys):
    _run(study, chats, "--filter", "coding")
    out, err = capsys.readouterr()
    kept = sorted(Conversation.objects.filter(study=study).values_list("external_id", flat=True))
    assert kept == ["fence", "go", "py"]
    assert Turn.objects.filter(conversation__external_id="go").count() == 2
    assert "Imported 3 conversations (4 turns) from 1 file(s); rejected 2 records; " in out
    assert "dropped 2 by the filter; 7 records read." in out
    assert "dropped, case: 1" in out  # let's go
    assert "dropped, no language mentioned: 1" in out  # the poem
    assert "Go: 1 conversations; near misses: case 1" in out
    assert f"{chats}:2" in out and "let's [go] to the beach" in out
    assert f"{chats}:5: invalid JSON" in err
    assert "duplicate id 'py'" in err


def test_a_dry_run_writes_nothing_and_prints_the_counts_of_the_real_run(study, chats, capsys):
    _run(study, chats, "--filter", "coding", "--dry-run")
    dry = capsys.readouterr()
    assert not Conversation.objects.exists()
    assert "Dry run: nothing was written." in dry.out
    assert "Would import 3 conversations (4 turns) from 1 file(s); rejected 2 records" in dry.out
    assert "match    go (" in dry.out and "in [Go]?" in dry.out
    assert "near miss lets-go (" in dry.out

    _run(study, chats, "--filter", "coding")
    real = capsys.readouterr()
    assert Conversation.objects.count() == 3
    # the same report, but for the verb: the dry run and the real run agree
    assert real.out.replace("Imported", "Would import") == dry.out.replace(
        "Dry run: nothing was written.\n", ""
    )
    assert real.err == dry.err


def test_a_dry_run_sees_the_duplicates_of_earlier_imports(study, chats, capsys):
    _run(study, chats, "--filter", "coding")
    capsys.readouterr()
    # the same ids with other content (the very same records would be "already imported")
    edited = chats.with_name("edited.jsonl")
    edited.write_text(chats.read_text().replace("thanks", "thank you"))
    _run(study, edited, "--filter", "coding", "--dry-run")
    out, err = capsys.readouterr()
    assert "Would import 0 conversations (0 turns) from 1 file(s); rejected 3 records" in out
    assert "already imported: 2" in out  # py and fence, unchanged
    assert f"duplicate id 'go' (first seen at {chats}:1)" in err
    assert Conversation.objects.count() == 3


def test_a_dry_run_sees_the_duplicates_of_its_own_earlier_batches(
    study, chats, capsys, monkeypatch
):
    monkeypatch.setattr("annotation.importers.writer.BATCH_SIZE", 1)
    _run(study, chats, "--filter", "coding", "--dry-run")
    out, err = capsys.readouterr()
    assert "Would import 3 conversations (4 turns) from 1 file(s); rejected 2 records" in out
    assert f"{chats}:6: duplicate id 'py' (first seen at {chats}:3)" in err


def test_a_dry_run_without_the_filter_counts_everything_and_writes_nothing(study, chats, capsys):
    _run(study, chats, "--dry-run")
    out, _ = capsys.readouterr()
    assert (
        "Would import 5 conversations (6 turns) from 1 file(s); rejected 2 records; "
        "7 records read." in out
    )
    assert "Coding filter" not in out
    assert not Conversation.objects.exists()


def test_it_uses_the_studys_edited_rules(study, chats, capsys):
    rules = default_rules()
    rules["languages"].append({"language": "Poetry", "names": ["poem"], "extensions": [".poem"]})
    study.coding_rules = rules
    study.save()
    _run(study, chats, "--filter", "coding")
    assert Conversation.objects.filter(external_id="poem").exists()


def test_it_refuses_unusable_rules_naming_the_language_and_field(study, chats):
    rules = default_rules()
    rules["languages"][6]["exact_case"] = ["GO"]
    study.coding_rules = rules
    study.save()
    with pytest.raises(CommandError, match="Go: exact_case: 'GO' is not one of its names"):
        _run(study, chats, "--filter", "coding")
    assert not Conversation.objects.exists()


def test_it_fails_when_the_filter_dropped_everything(study, tmp_path, capsys):
    path = tmp_path / "a.jsonl"
    path.write_text(native("c1", "let's go", "ok") + "\n")
    with pytest.raises(CommandError, match="Nothing could be imported.*dropped 1 by the filter"):
        _run(study, path, "--filter", "coding")


def test_it_refuses_an_unknown_filter(study, chats):
    with pytest.raises(CommandError, match="invalid choice: 'poems'"):
        _run(study, chats, "--filter", "poems")


def test_the_filter_also_judges_agent_logs_that_are_one_conversation_a_file(
    study, tmp_path, capsys
):
    history = tmp_path / ".specstory" / "history"
    history.mkdir(parents=True)
    session = (
        "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n# {title}\n\n"
        "_**User**_\n\n{prompt}\n\n---\n\n_**Agent (claude)**_\n\n{reply}\n"
    )
    (history / "2026-01-01_10-00-00Z-code.md").write_text(
        session.format(title="Code", prompt="Fix the bug in main.go", reply="Done.")
    )
    (history / "2026-01-02_10-00-00Z-trip.md").write_text(
        session.format(title="Trip", prompt="Plan a trip, let's go!", reply="Sure.")
    )
    _run(study, history, "--filter", "coding")
    assert list(Conversation.objects.values_list("source_file", flat=True)) == [
        str(history / "2026-01-01_10-00-00Z-code.md")
    ]
    assert "dropped 1 by the filter" in capsys.readouterr().out
