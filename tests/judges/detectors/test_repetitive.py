"""repetitive-response, from TAXONOMY.md's definition: "the reply repeats an earlier answer
with no real progress on the user's new request" (the example: the user says the function
still fails on empty input; the reply repeats the previous listing unchanged with a new
explanation)."""

from __future__ import annotations

import pytest

from annotation.judges.detectors import detect, get
from annotation.judges.detectors.repetitive import is_change_request

from .conftest import conversation, fence

DETECTOR = get("repetitive-response")

CODE = """
def parse(text):
    items = text.split(",")
    return [int(item) for item in items]
"""


def test_the_same_listing_after_a_failure_report_is_repetitive():
    turns = conversation(
        ("Parse comma-separated numbers.", fence(CODE)),
        (
            "It still fails on empty input.",
            "Sorry about that! This version handles it:\n\n"
            + fence(CODE)
            + "\n\nIt splits on commas.",
        ),
    )
    found = detect(DETECTOR, turns)
    assert [(i, s) for i, s, _ in found] == [(1, 1.0)]
    evidence = found[0][2]
    assert evidence.turns == (0, 1)
    assert "still fails on empty input" in evidence.quotes[0]
    assert "no meaningful line changed" in evidence.detail


def test_reindented_and_recommented_code_is_still_the_same_code():
    noisy = (
        '# parse numbers\ndef parse( text ):\n\n        items = text.split(",")  # split\n'
        "        return [int(item) for item in items]\n"
    )
    turns = conversation(
        ("Parse comma-separated numbers.", fence(CODE)),
        ("Use a generator instead.", fence(noisy)),
    )
    assert [(i, s) for i, s, _ in detect(DETECTOR, turns)] == [(1, 1.0)]


def test_a_changed_line_lowers_the_score_by_the_count_of_changed_lines():
    one = CODE.replace('text.split(",")', 'text.split(",") if text else []')
    two = one.replace("int(item)", "int(item.strip())")
    for code, expected in ((one, 0.5), (two, 1 / 3)):
        turns = conversation(("Parse numbers.", fence(CODE)), ("Handle empty input.", fence(code)))
        assert [s for _, s, _ in detect(DETECTOR, turns)] == [pytest.approx(expected)]


def test_an_unchanged_listing_when_nothing_was_asked_to_change_is_not_judged():
    for question in (
        "Thanks! Can you explain how the list comprehension works?",
        "What does split return?",
        "Show me the full code again.",
    ):
        turns = conversation(
            ("Parse comma-separated numbers.", fence(CODE)),
            (question, "Here it is, with an explanation:\n\n" + fence(CODE)),
        )
        assert detect(DETECTOR, turns) == [], question


def test_the_previous_reply_with_code_is_compared_even_across_prose_turns():
    turns = conversation(
        ("Parse numbers.", fence(CODE)),
        ("Why a list comprehension?", "It is short."),
        ("Make it skip blank items.", fence(CODE)),
    )
    assert [(i, s) for i, s, _ in detect(DETECTOR, turns)] == [(2, 1.0)]
    assert detect(DETECTOR, turns)[0][2].turns == (0, 2)


def test_a_new_block_counts_all_its_lines_and_an_omitted_one_none():
    test_code = "def test_parse():\n    assert parse('1,2') == [1, 2]"
    turns = conversation(
        ("Parse numbers.", fence(CODE) + "\n\n" + fence("print(parse('1'))")),
        ("Add a test.", fence(CODE) + "\n\n" + fence(test_code)),
    )
    assert [s for _, s, _ in detect(DETECTOR, turns)] == [pytest.approx(1 / 3)]


@pytest.mark.parametrize(
    "text",
    [
        "Fix the crash on empty input.",
        "Can you add logging?",
        "please use pathlib instead",
        "It doesn't work: ValueError: invalid literal for int()",
        "still getting the same error",
        "Thanks. Now make it async.",
        "Rename parse to parse_numbers",
    ],
)
def test_it_reads_change_requests(text):
    assert is_change_request(text)


@pytest.mark.parametrize(
    "text",
    [
        "What does this do?",
        "Thanks, that works!",
        "Explain the error handling please",
        "Give me the complete code",
        "Why does it use a list?",
        "```python\nraise ValueError('fix it')\n```\nHow does this differ?",
    ],
)
def test_it_reads_questions_thanks_and_requests_to_see_it_again_as_no_change(text):
    assert not is_change_request(text)


def test_a_reply_whose_code_is_only_comments_is_not_judged():
    turns = conversation(
        ("Parse numbers.", fence(CODE)),
        ("Fix it.", fence("# the fix goes here\n# (unchanged otherwise)")),
    )
    assert detect(DETECTOR, turns) == []
