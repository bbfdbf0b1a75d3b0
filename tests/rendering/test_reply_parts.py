"""An agent's tool calls, tool results and thinking, kept beside the reply: each folded with its
kind, its tool and one line that says what it did, its body rendered (JSON pretty-printed and
highlighted, output as code, thinking as Markdown), and all of it hostile text."""

from __future__ import annotations

import json

import pytest
from django.template import Context, Template
from django.urls import reverse

from annotation.models import Turn
from annotation.rendering import reply_part
from tests.factories import make_conversation, make_group
from tests.rendering.test_markdown import Tree, assert_safe


def shown(part: dict):
    p = reply_part(part)
    assert_safe(Tree(p.body))
    return p


def test_a_call_says_its_tool_and_its_command():
    p = shown({"type": "tool_call", "name": "Bash", "arguments": '{"command": "ls -la src"}'})
    assert (p.kind, p.label, p.name, p.summary) == ("tool_call", "Tool call", "Bash", "ls -la src")


def test_arguments_nested_too_deep_are_shown_as_text():
    # read as JSON, they were a RecursionError: the card a 500
    deep = '{"a": ' * 5_000 + "1" + "}" * 5_000
    p = shown({"type": "tool_call", "name": "Bash", "arguments": deep})
    assert p.kind == "tool_call" and deep[:60] in Tree(p.body).text


@pytest.mark.parametrize(
    "arguments, summary",
    [
        ({"file_path": "/src/app.py", "old_string": "a", "new_string": "b"}, "/src/app.py"),
        ({"path": "."}, "."),
        ({"pattern": "TODO", "glob": "*.py"}, "TODO"),
        ({"query": "weather in Paris"}, "weather in Paris"),
        ({"url": "https://a.example/x"}, "https://a.example/x"),
        ({"limit": 3, "offset": 2}, '{"limit": 3, "offset": 2}'),
        ("not json\nsecond line", "not json"),
    ],
)
def test_a_calls_summary_is_what_it_works_on(arguments, summary):
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    assert shown({"type": "tool_call", "name": "T", "arguments": raw}).summary == summary


def test_a_call_whose_arguments_are_an_object_is_summarised_too():
    p = shown({"type": "tool_use", "name": "Read", "input": {"file_path": "a.py"}})
    assert (p.label, p.summary) == ("Tool call", "a.py")


def test_a_calls_arguments_are_pretty_printed_and_highlighted():
    p = shown({"type": "tool_call", "name": "Edit", "arguments": '{"path": "a.py", "n": [1, 2]}'})
    tree = Tree(p.body)
    assert tree.all("pre")[0]["data-lang"] == "json"
    assert '{\n  "path": "a.py",\n  "n": [\n    1,\n    2\n  ]\n}' in tree.text
    assert tree.all("span")


def test_a_call_without_arguments_has_an_empty_body():
    p = shown({"type": "tool_call", "id": "call_2", "name": "run", "arguments": None})
    assert (p.name, p.summary) == ("run", "")
    assert Tree(p.body).text.strip() == "(no arguments)"


def test_a_result_says_its_first_line_and_shows_its_output_as_code():
    p = shown({"type": "tool_result", "name": "ls", "content": "\n\na.py\nb.py\n"})
    assert (p.label, p.name, p.summary) == ("Tool result", "ls", "a.py")
    tree = Tree(p.body)
    assert tree.all("pre") and "a.py\nb.py" in tree.text


def test_a_result_in_json_is_pretty_printed():
    p = shown({"type": "tool_result", "content": '{"ok": true}'})
    assert Tree(p.body).all("pre")[0]["data-lang"] == "json"
    assert '{\n  "ok": true\n}' in Tree(p.body).text


def test_a_result_made_of_blocks_shows_their_text():
    content = [{"type": "text", "text": "line one\nline two"}, {"type": "image"}]
    p = shown({"type": "tool_result", "content": content})
    assert p.summary == "line one"
    assert "line one\nline two" in Tree(p.body).text


def test_thinking_is_markdown():
    p = shown({"type": "thinking", "thinking": "I should **not** touch `main`.\n\n- one\n- two"})
    assert (p.label, p.summary) == ("Thinking", "I should **not** touch `main`.")
    tree = Tree(p.body)
    assert tree.all("strong") and tree.all("code") and len(tree.all("li")) == 2


def test_reasoning_is_thinking_too():
    assert shown({"kind": "reasoning", "text": "hmm"}).label == "Thinking"


def test_an_unknown_part_shows_its_kind_and_all_its_data():
    p = shown({"type": "progress", "step": 3})
    assert (p.label, p.name) == ("progress", "")
    assert '"step": 3' in Tree(p.body).text


def test_a_long_summary_is_cut_to_one_short_line():
    p = shown(
        {"type": "tool_call", "name": "Bash", "arguments": json.dumps({"command": "x" * 500})}
    )
    assert len(p.summary) <= 100 and p.summary.endswith("…")


def test_a_hostile_part_is_text():
    part = {
        "type": "<img src=x onerror=window.pwned=1>",
        "name": "<script>window.pwned=1</script>",
        "content": "<svg onload=window.pwned=1>",
    }
    assert "<svg onload=window.pwned=1>" in Tree(shown(part).body).text
    thinking = shown({"type": "thinking", "thinking": "[x](javascript:y) <script>z</script>"})
    assert "[x](javascript:y) <script>z</script>" in Tree(thinking.body).text
    html = Template(
        "{% for part in parts %}{% include 'annotation/_reply_part.html' %}{% endfor %}"
    ).render(Context({"parts": [part]}))
    tree = Tree(html)
    assert not {t for t, _ in tree.elements} & {"script", "img", "svg"}
    assert "<script>window.pwned=1</script>" in tree.text


@pytest.mark.django_db
def test_the_card_folds_each_part_with_its_kind_tool_and_summary(client, study, alice):
    group = make_group(study, "g", [alice])
    turn = make_conversation(study, "agent", n_turns=1, group=group).turns.get()
    Turn.objects.filter(pk=turn.pk).update(
        reply_parts=[
            {"type": "tool_call", "name": "Bash", "arguments": '{"command": "pytest -q"}'},
            {"type": "tool_result", "content": "3 passed\n"},
        ]
    )
    client.force_login(alice)
    tree = Tree(client.get(reverse("card", args=[study.slug, turn.pk])).content.decode())
    parts = [a for t, a in tree.elements if t == "details" and "part" in a.get("class", "")]
    assert [p["data-kind"] for p in parts] == ["tool_call", "tool_result"]
    assert all("open" not in p for p in parts)  # folded
    text = " ".join(tree.text.split())
    assert "Tool call Bash pytest -q" in text and "Tool result 3 passed" in text


def test_a_part_past_the_display_limit_is_cut_with_a_notice(settings):
    settings.CARDSORT_MESSAGE_DISPLAY_LIMIT = 1000
    output = "x" * 5000 + "THE-END"
    for part in (
        {"type": "tool_result", "content": output},
        {"type": "thinking", "thinking": output},
        {"type": "tool_call", "name": "Bash", "arguments": {"command": output}},
    ):
        body = str(reply_part(part).body)
        assert "THE-END" not in body, part["type"]
        assert "Shown: the first 1,000 of" in body, part["type"]
    assert "Shown" not in str(reply_part({"type": "tool_result", "content": "short"}).body)
