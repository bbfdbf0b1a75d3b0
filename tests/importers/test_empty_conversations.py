"""FORMATS.md section 0, rule 6: a record that gives no turn (no messages, or no user message)
is rejected with its file and line: there is nothing to sort. In every format."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from annotation.importers import import_files
from annotation.importers.base import Message, Record, RecordError, build_conversation
from annotation.models import Conversation

NOTHING_TO_SORT = "no user message: nothing to sort"


def native(cid: str, messages: list[dict]) -> dict:
    return {"id": cid, "messages": messages}


def wildchat(cid: str, utterances: list[dict]) -> dict:
    conversation = [{**u, "turn_identifier": 1} for u in utterances]
    return {"conversation_hash": cid, "conversation": conversation, "turn": len(utterances) // 2}


def lmsys(cid: str, utterances: list[dict]) -> dict:
    return {"conversation_id": cid, "conversation": utterances, "openai_moderation": []}


def sharegpt(cid: str, utterances: list[dict]) -> dict:
    names = {"user": "human", "assistant": "gpt", "system": "system"}
    return {
        "id": cid,
        "conversations": [{"from": names[u["role"]], "value": u["content"]} for u in utterances],
    }


def openai(cid: str, messages: list[dict]) -> dict:
    return {"messages": messages, "note": cid}


QA = [{"role": "user", "content": "fix my loop"}, {"role": "assistant", "content": "done"}]
ASSISTANT_ONLY = [
    {"role": "system", "content": "You are a coder."},
    {"role": "assistant", "content": "Hi! How can I help?"},
]


@pytest.mark.parametrize("empty", [[], ASSISTANT_ONLY], ids=["no-messages", "assistant-only"])
@pytest.mark.parametrize(
    "make, fmt",
    [
        (native, "native"),
        (openai, "openai"),
        (sharegpt, "sharegpt"),
        (wildchat, "wildchat"),
        (lmsys, "lmsys"),
    ],
)
def test_it_rejects_a_record_with_no_user_message_naming_the_line(study, files, make, fmt, empty):
    path = files.jsonl("a.jsonl", make("c1", QA), make("c2", empty), make("c3", QA))
    report = import_files(study, [path])
    assert (report.conversations, report.turns, report.rejected) == (2, 2, 1)
    assert report.errors == [f"{path}:2: {NOTHING_TO_SORT}"]
    assert Conversation.objects.filter(study=study).count() == 2
    assert set(Conversation.objects.values_list("source_format", flat=True)) == {fmt}
    assert not any("no turns" in w for w in report.warnings)


def test_it_rejects_an_empty_element_of_a_json_array_naming_its_index(study, files):
    path = files.json("s.json", [sharegpt("a", QA), sharegpt("b", []), sharegpt("c", QA)])
    report = import_files(study, [path])
    assert report.conversations == 2
    assert report.errors == [f"{path}[1] (id=b): {NOTHING_TO_SORT}"]


def test_it_recognises_a_file_whose_first_record_is_empty(study, files):
    # An empty LMSYS conversation looks like no format at all; the records after it decide.
    path = files.jsonl("l.jsonl", lmsys("c1", []), lmsys("c2", QA))
    report = import_files(study, [path])
    assert report.conversations == 1
    assert report.errors == [f"{path}:1: {NOTHING_TO_SORT}"]
    assert Conversation.objects.get().source_format == "lmsys"


def test_it_refuses_to_build_a_conversation_without_turns():
    for messages in ([], [Message("system", "Be brief."), Message("assistant", "Hello.")]):
        with pytest.raises(RecordError, match=NOTHING_TO_SORT):
            build_conversation(Record("c1", messages))


def test_it_counts_empty_records_as_rejected_in_the_command_summary(study, files):
    path = files.jsonl("a.jsonl", native("c1", QA), native("c2", []))
    out, err = StringIO(), StringIO()
    call_command("import_conversations", study.slug, str(path), stdout=out, stderr=err)
    assert (
        "Imported 1 conversations (1 turns) from 1 file(s); rejected 1 records; 2 records read."
        in (out.getvalue())
    )
    assert err.getvalue() == f"{path}:2: {NOTHING_TO_SORT}\n"
