"""code-rollback, from TAXONOMY.md's definition: "the reply reverts to an earlier version of
the code, reintroducing a defect that had already been fixed" (the example: a null check
fixed in turn 3 is gone again in turn 5's full listing)."""

from __future__ import annotations

from annotation.judges.detectors import detect, get

from .conftest import conversation, fence

DETECTOR = get("code-rollback")

BUGGY = """
def average(values):
    total = sum(values)
    count = len(values)
    return total / count
"""
FIXED = """
def average(values):
    if not values:
        return 0.0
    total = sum(values)
    count = len(values)
    return total / count
"""
FIXED_AND_ROUNDED = """
def average(values):
    if not values:
        return 0.0
    total = sum(values)
    count = len(values)
    return round(total / count, 2)
"""
REVERTED_BUT_ROUNDED = """
def average(values):
    total = sum(values)
    count = len(values)
    return round(total / count, 2)
"""


def scores(turns):
    return {index: score for index, score, _ in detect(DETECTOR, turns)}


def test_it_finds_the_code_of_an_earlier_turn_after_a_fix():
    turns = conversation(
        ("Write a function that averages a list.", fence(BUGGY)),
        ("It crashes on an empty list.", "Right, here is the fix:\n\n" + fence(FIXED)),
        ("Now add a docstring-free version for the README.", fence(BUGGY)),
    )
    found = detect(DETECTOR, turns)
    assert [(i, s) for i, s, _ in found] == [(2, 1.0)]
    evidence = found[0][2]
    assert evidence.turns == (0, 1, 2)
    assert any("if not values:" in q for q in evidence.quotes)
    assert "-    if not values:" in evidence.detail  # the diff of the undone fix


def test_it_finds_a_fix_whose_added_lines_disappear_from_a_changed_listing():
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        ("It crashes on an empty list.", fence(FIXED)),
        ("Round the result to two places.", fence(FIXED_AND_ROUNDED)),
        ("Add type hints later; for now just print the full listing.", fence(REVERTED_BUT_ROUNDED)),
    )
    found = scores(turns)
    assert found[3] == 1.0  # both added lines of the fix are gone, the anchors are there
    assert found[2] == 0.0  # turn 2 kept the fix


def test_it_ignores_comment_and_whitespace_changes_of_the_earlier_version():
    commented = BUGGY.replace("total = sum(values)", "total  =  sum(values)   # add up")
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        ("It crashes on an empty list.", fence(FIXED)),
        ("Again please.", fence("# the average\n" + commented)),
    )
    assert scores(turns)[2] == 1.0


def test_a_rollback_the_user_asked_for_is_no_smell():
    for request in (
        "That broke my tests, revert to the previous version.",
        "Undo that change.",
        "Please go back to the code you had before.",
        "Keep it as before, without the check.",
    ):
        turns = conversation(
            ("Average a list.", fence(BUGGY)),
            ("It crashes on an empty list.", fence(FIXED)),
            (request, fence(BUGGY)),
        )
        found = detect(DETECTOR, turns)
        assert [(i, s) for i, s, _ in found] == [(2, 0.0)], request
        assert "asked to go back" in found[0][2].detail


def test_code_that_moves_forward_is_no_rollback():
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        ("It crashes on an empty list.", fence(FIXED)),
        ("Round the result.", fence(FIXED_AND_ROUNDED)),
    )
    assert scores(turns) == {2: 0.0}


def test_repeating_the_latest_version_is_no_rollback():
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        ("It crashes on an empty list.", fence(FIXED)),
        ("Show it again.", fence(FIXED)),
    )
    assert scores(turns) == {2: 0.0}


def test_it_does_not_apply_without_two_earlier_versions():
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        ("Explain it.", "It sums the values and divides by their count."),
        ("Fix the empty list.", fence(FIXED)),
    )
    assert detect(DETECTOR, turns) == []


def test_an_earlier_version_out_of_the_radius_does_not_count():
    filler = [("What is a list?", "A sequence.")] * 5
    turns = conversation(
        ("Average a list.", fence(BUGGY)),
        *filler,
        ("Crash on empty.", fence(FIXED)),
        ("Again.", fence(BUGGY)),
    )
    assert detect(DETECTOR, turns) == []  # the buggy version is 7 turns back


def test_a_snippet_of_another_function_is_not_a_revert_of_the_fix():
    listing = (
        FIXED
        + "\n\ndef median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n"
    )
    snippet = "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return (ordered[middle - 1] + ordered[middle]) / 2"
    turns = conversation(
        (
            "Average and median.",
            fence(
                BUGGY
                + "\n\ndef median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n"
            ),
        ),
        ("Average crashes on empty lists.", fence(listing)),
        ("The median is wrong for even lengths.", fence(snippet)),
    )
    assert all(score == 0.0 for _, score, _ in detect(DETECTOR, turns))


def test_it_works_for_c_family_code_with_its_comments():
    before = "int first(int *a, int n) {\n    return a[0];\n}"
    fixed = "int first(int *a, int n) {\n    if (n == 0) return -1;\n    return a[0];\n}"
    again = "/* first element */\nint first(int *a, int n) {\n    return a[0]; // done\n}"
    turns = conversation(
        ("First element.", fence(before, "c")),
        ("Crash when n is 0.", fence(fixed, "c")),
        ("Make it shorter.", fence(again, "c")),
    )
    assert scores(turns)[2] == 1.0


def test_a_snippet_shown_again_after_the_whole_listing_is_no_rollback():
    other = "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]"
    turns = conversation(
        ("Average a list.", fence(FIXED)),
        ("Add a median.", fence(FIXED + "\n\n" + other)),
        ("Show me just the average again.", fence(FIXED)),
    )
    assert all(score == 0.0 for _, score, _ in detect(DETECTOR, turns))
