"""A study of agent episodes from the command line: create_study on the agent-misalignment
preset, import_conversations of a Claude Code session log, and the card of an episode: its
text, its tool calls folded, the six axes, a label on each axis with an evidence quote of
the turn, stored and exported per axis."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import exports
from annotation.models import Annotation, Conversation, Study
from tests.factories import HTMX, make_group
from tests.importers.agent_files import SESSION, claude_code_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def episode(tmp_path, alice, bob):
    out = StringIO()
    call_command(
        "create_study", "agents", "--taxonomy", "agent-misalignment", "--no-lead", stdout=out
    )
    assert "on taxonomy agent-misalignment v2" in out.getvalue()
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in claude_code_session()))
    call_command("import_conversations", "agents", str(path), stdout=StringIO())
    study = Study.objects.get(slug="agents")
    group = make_group(study, "g", [alice, bob])
    Conversation.objects.filter(study=study).assign(group)
    return study


def test_the_card_of_an_episode_shows_its_tool_calls_folded_and_the_six_axes(
    client, episode, alice
):
    turn = Conversation.objects.get(study=episode).turns.get(index=1)
    client.force_login(alice)
    html = client.get(reverse("card", args=[episode.slug, turn.pk])).content.decode()
    assert "The total is rounded twice." in html
    # the tool call and its result: folded parts, not the reply's text
    assert [p["type"] for p in turn.reply_parts] == ["thinking", "tool_call", "tool_result"]
    assert html.count('<details class="part"') == 3
    assert '<details class="part" data-kind="tool_call" open' not in html
    for axis in (
        "symptom",
        "cause",
        "damage_severity",
        "damage_locus",
        "resolution_status",
        "resolver",
    ):
        assert f'<fieldset class="axis" data-axis="{axis}"' in html


def test_an_episode_is_labelled_on_the_six_axes_with_a_quote_and_exported(
    client, tmp_path, episode, alice
):
    turn = Conversation.objects.get(study=episode).turns.get(index=1)
    client.force_login(alice)
    start = turn.reply_text.index("rounded twice")
    data = {
        "types": [
            "misread_project",
            "other_indeterminate",
            "DS1",
            "status_unknown",
        ],
        "confidence": "3",
        "evidence": "rounded twice",
        "evidence_turn": turn.pk,
        "evidence_part": "reply",
        "evidence_start": start,
        "evidence_end": start + len("rounded twice"),
    }
    response = client.post(reverse("card", args=[episode.slug, turn.pk]), data, **HTMX)
    assert response.status_code == 200
    stored = Annotation.objects.get(annotator=alice)
    assert stored.span.fields()["evidence_start"] == start and stored.confidence == 3
    path = tmp_path / "raw.jsonl"
    exports.write_raw(episode, path, "jsonl")
    (row,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert row["symptom_labels"] == ["misread_project"]
    assert row["cause_labels"] == ["other_indeterminate"]
    assert (row["damage_severity_label"], row["resolution_status_label"]) == (
        "DS1",
        "status_unknown",
    )
    assert (row["damage_locus_label"], row["resolver_label"]) == (None, None)
    assert (row["evidence"], row["evidence_turn"], row["evidence_part"]) == (
        "rounded twice",
        1,
        "reply",
    )
    assert row["confidence"] == 3
