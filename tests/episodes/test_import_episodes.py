"""import_episodes: an extractor's episodes, their quotes located in the stored text, the
run and its counts; bad lines named; nothing half-written."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.importers.episodes import import_episodes
from annotation.models import Episode, EvidenceQuote, ExtractionRun, Turn

from .conftest import episode, write_jsonl


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("import_episodes", "ag", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_imports_episodes_with_located_quotes_and_keeps_the_run(agents, tmp_path):
    evidence = [
        {"turn": 2, "part": "user", "quote": "do not touch the API"},
        {"turn": 2, "part": "tool_result", "quote": "removed 12 files"},
        {"turn": 3, "part": "tool_call", "quote": '"command": "rm -rf tests/"'},
    ]
    path = write_jsonl(
        tmp_path / "run.jsonl",
        [
            episode(first=2, last=3, evidence=evidence, labels={"symptom": ["scope_overreach"]}),
            episode("s2", 1, 3, 0.4),
            episode("s2", 2, 2, 0.7, valid=False, invalid_reason="normative_prior_bias"),
        ],
    )
    out, err = run(path, "--run", "gpt", "--min-confidence", "0.5", "--source", "gpt-5")
    assert "2 imported, 1 dropped for confidence, 0 rejected" in out and err == ""
    run_ = ExtractionRun.objects.get(study=agents, name="gpt")
    assert run_.source == "gpt-5" and run_.parameters["min_confidence"] == 0.5
    assert run_.counts == {
        "read": 3, "imported": 2, "dropped_confidence": 1, "rejected": 0, "quotes_missing": 0
    }  # fmt: skip
    first = Episode.objects.get(run=run_, conversation__external_id="s1")
    assert (first.last_turn, first.confidence, first.source_line) == (3, 0.9, 1)
    assert first.run_labels == {"symptom": ["scope_overreach"]} and first.run_valid is None
    quotes = list(first.evidence.order_by("order"))
    assert [(q.part, q.part_index) for q in quotes] == [
        ("user", None), ("tool_result", 2), ("tool_call", 1)
    ]  # fmt: skip
    turn2 = Turn.objects.get(conversation__external_id="s1", index=2)
    assert quotes[0].turn == turn2
    assert turn2.user_text[quotes[0].start : quotes[0].end] == "do not touch the API"
    second = Episode.objects.get(run=run_, conversation__external_id="s2")
    assert (second.run_valid, second.run_invalid_reason) == (False, "normative_prior_bias")


def test_a_quote_is_found_with_white_space_normalised_and_mapped_back(agents, tmp_path):
    evidence = [
        {"turn": 1, "part": "reply", "quote": "the API of module 1."},
        {"turn": 1, "part": "thinking", "quote": "tests fixed; I will"},
    ]
    import_episodes(agents, write_jsonl(tmp_path / "r.jsonl", [episode(evidence=evidence)]))
    reply, thinking = EvidenceQuote.objects.order_by("order")
    turn = reply.turn
    # the stored span runs over the original white space (a blank line, three spaces)
    assert reply.quote == turn.reply_text[reply.start : reply.end] == "the API\n\nof module 1."
    assert thinking.quote == "tests   fixed;\nI will" and thinking.part_index == 0


def test_a_missing_quote_is_reported_and_the_episode_kept_without_it(agents, tmp_path):
    evidence = [
        {"turn": 1, "part": "user", "quote": "do not touch the API"},
        {"turn": 1, "part": "user", "quote": "nowhere"},
        {"turn": 2, "part": "tool_result", "quote": "rm -rf"},
    ]
    path = write_jsonl(tmp_path / "r.jsonl", [episode(evidence=evidence)])
    out, err = run(path)
    assert f"{path}:1: evidence[1]: quote not found in turn 1 user" in err
    assert f"{path}:1: evidence[2]: quote not found in turn 2 tool result" in err
    assert "1 imported" in out and "2 quotes not found" in out
    assert EvidenceQuote.objects.count() == 1


def test_an_episode_none_of_whose_quotes_is_found_is_rejected(agents, tmp_path):
    lost = [{"turn": 1, "part": "reply", "quote": "never said"}]
    path = write_jsonl(tmp_path / "r.jsonl", [episode(), episode(evidence=lost)])
    out, err = run(path, "--run", "r")
    assert f"{path}:2: evidence: none of its 1 quote(s) found; episode rejected" in err
    assert ExtractionRun.objects.get(name="r").counts["rejected"] == 1
    assert Episode.objects.count() == 1


@pytest.mark.parametrize(
    "record, message",
    [
        ("{not json", "invalid JSON"),
        (episode(first=3, last=2), "last_turn: 2 is before first_turn 3"),
        (episode(last=9), "last_turn: 9 out of range (conversation 's1' has 4 turns)"),
        (episode(conversation="nope"), ": conversation: unknown conversation id 'nope' in"),
        (episode(confidence=1.5), "confidence: must be a number from 0 to 1, got 1.5"),
        ({"conversation": "s1", "first_turn": 1}, "last_turn: missing field"),
        (episode(evidence=[{"turn": 1, "part": "x", "quote": "a"}]), "evidence[0].part:"),
        (episode(evidence=[{"turn": 7, "part": "user", "quote": "a"}]), "evidence[0].turn: 7"),
        (episode(labels={"symptom": ["nope"]}), "labels.symptom[0]: unknown type code 'nope'"),
        (episode(labels={"cause": ["instruction_following_failure", "underspecified_instruction",
                                   "other_indeterminate"]}), "labels.cause: at most 2"),
        (episode(valid=False, invalid_reason="bored"), "invalid_reason: unknown reason 'bored'"),
    ],
)  # fmt: skip
def test_a_bad_line_is_named_and_rejected_the_rest_imported(agents, tmp_path, record, message):
    path = write_jsonl(tmp_path / "r.jsonl", [episode(), record])
    out, err = run(path)
    assert f"{path}:2:" in err and message in err
    assert "1 imported" in out and "1 rejected" in out
    assert Episode.objects.count() == 1


def test_a_file_of_bad_lines_leaves_nothing_not_even_its_run(agents, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [episode(last=9)])
    with pytest.raises(CommandError, match="nothing could be imported"):
        run(path, "--run", "bad")
    assert not ExtractionRun.objects.exists() and not Episode.objects.exists()


def test_a_failure_mid_import_leaves_nothing(agents, tmp_path, monkeypatch):
    from annotation.importers import episodes as importer

    path = write_jsonl(tmp_path / "r.jsonl", [episode(), episode(), episode()])
    calls = []
    original = importer._Importer.write

    def failing(self, items):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        original(self, items)

    monkeypatch.setattr(importer._Importer, "write", failing)
    with pytest.raises(RuntimeError):
        import_episodes(agents, path, "r", batch_size=1)
    assert not ExtractionRun.objects.exists() and not Episode.objects.exists()


def test_a_run_name_is_not_taken_twice(agents, tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [episode()])
    run(path, "--run", "r")
    with pytest.raises(CommandError, match="already has a run named 'r'"):
        run(path, "--run", "r")
    assert Episode.objects.count() == 1


def test_the_batches_see_every_line(agents, tmp_path):
    records = [episode(first=i % 4 + 1, last=i % 4 + 1) for i in range(7)]
    report = import_episodes(agents, write_jsonl(tmp_path / "r.jsonl", records), batch_size=3)
    assert (
        report.counts["imported"] == 7 == Episode.objects.count() == EvidenceQuote.objects.count()
    )
