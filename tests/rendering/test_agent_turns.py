"""A card of every importer's format, agent logs included (tool calls, tool results,
reasoning), renders on every page that shows a turn: the card, the discussion page, the
moderator's queue and the timeline."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.importers import import_files
from annotation.models import Annotation, Conversation
from tests.factories import make_group, make_study, make_user
from tests.rendering.test_markdown import Tree

RECORDS = {
    "native": {
        "id": "n1",
        "messages": [
            {"role": "user", "content": "Fix the loop"},
            {"role": "assistant", "content": "```python\nfor i in range(3):\n    pass\n```"},
        ],
    },
    "openai-tools": {
        "messages": [
            {"role": "user", "content": "List the files"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "ls", "arguments": '{"path": "."}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "ls", "content": "a.py\nb.py"},
            {"role": "assistant", "content": "There are two files."},
        ]
    },
    "openai-call-without-arguments": {
        "messages": [
            {"role": "user", "content": "Run it"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "run"}}],
            },
        ]
    },
    "sharegpt": {
        "id": "sg1",
        "conversations": [
            {"from": "human", "value": "Write a regex"},
            {"from": "gpt", "value": "`^a+$`"},
        ],
    },
    "wildchat": {
        "conversation_hash": "w1",
        "model": "gpt-4",
        "conversation": [
            {"role": "user", "content": "Explain this C code", "turn_identifier": 1},
            {"role": "assistant", "content": "It allocates.", "turn_identifier": 1},
        ],
    },
    "lmsys": {
        "conversation_id": "l1",
        "model": "vicuna-13b",
        "conversation": [
            {"role": "user", "content": "Sort a list in Go"},
            {"role": "assistant", "content": "Use sort.Ints."},
        ],
        "turn": 1,
        "language": "English",
        "openai_moderation": [{"categories": {}, "category_scores": {}, "flagged": False}] * 2,
        "redacted": False,
    },
}


@pytest.fixture
def imported(db, tmp_path):
    study = make_study()
    alice, bob, lead = make_user("alice"), make_user("bob"), make_user("lead")
    study.add_member(lead, "lead", "expert")
    group = make_group(study, "A", [alice, bob])
    for name, record in RECORDS.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        report = import_files(study, [path])
        assert report.conversations == 1, (name, report.errors)
    Conversation.objects.filter(study=study).assign(group)
    return study, group, alice, bob, lead


def _dispute(study, group, alice, bob, turn) -> None:
    types = study.taxonomy_version.types_by_code()
    Annotation.submit(turn=turn, group=group, annotator=alice, types=[types["code_rollback"]])
    Annotation.submit(turn=turn, group=group, annotator=bob, types=[])


def test_it_renders_every_formats_last_card_on_every_page(client, imported):
    study, group, alice, bob, lead = imported
    for conversation in Conversation.objects.filter(study=study):
        turn = conversation.turns.order_by("-index").first()
        client.force_login(alice)
        card = client.get(reverse("card", args=[study.slug, turn.pk]))
        assert card.status_code == 200, conversation.source_format
        _dispute(study, group, alice, bob, turn)
        for name, user in (("discussion", alice), ("card_timeline", lead)):
            client.force_login(user)
            page = client.get(reverse(name, args=[study.slug, turn.pk]))
            assert page.status_code == 200, (name, conversation.external_id)
    client.force_login(lead)
    queue = client.get(reverse("moderate_queue", args=[study.slug]))
    assert queue.status_code == 200


def test_it_shows_tool_calls_and_results_folded_in_the_reply(client, imported):
    study, group, alice, bob, lead = imported
    turn = Conversation.objects.get(
        study=study, source_file__endswith="openai-tools.jsonl"
    ).turns.first()
    client.force_login(alice)
    tree = Tree(client.get(reverse("card", args=[study.slug, turn.pk])).content.decode())
    parts = [a["data-kind"] for t, a in tree.elements if t == "details" and "data-kind" in a]
    assert parts == ["tool_call", "tool_result"]
    text = " ".join(tree.text.split())
    assert "Tool call ls ." in text and "Tool result ls a.py" in text
    assert '{\n  "path": "."\n}' in tree.text and "a.py\nb.py" in tree.text
