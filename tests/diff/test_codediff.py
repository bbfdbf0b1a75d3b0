"""annotation/codediff.py: the code blocks of a reply, the closest earlier block of each (same
language, most similar, the most recent on a tie) and their diff, side by side and unified."""

from __future__ import annotations

from annotation.codediff import code_blocks, diff_reply, has_code

BUGGY = "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n"
FIXED = (
    "def mean(xs):\n    if not xs:\n        return 0.0\n    total = 0\n    for x in xs:\n"
    "        total += x\n    return total / len(xs)\n"
)


def fence(code: str, lang: str = "python", mark: str = "```") -> str:
    return f"{mark}{lang}\n{code}{mark}\n"


def reply(*blocks: str, prose: str = "Here you go:") -> str:
    return prose + "\n\n" + "\nAnd then:\n\n".join(blocks)


def sides(d, kind: str) -> tuple[list[str], list[str]]:
    """The old and new texts of the side-by-side rows of one kind."""
    rows = [r for r in d.rows if r.kind == kind]
    old = ["".join(t for t, _ in r.old) for r in rows]
    new = ["".join(t for t, _ in r.new) for r in rows]
    return old, new


# --- blocks --------------------------------------------------------------------------------


def test_it_extracts_backtick_and_tilde_fences_with_their_language():
    text = "Intro\n\n```python\nx = 1\n```\n\nmid\n\n~~~ js extra words\nlet y = 2;\n~~~\n"
    blocks = code_blocks(text, turn=4)
    assert [(b.lang, b.lines, b.turn, b.position) for b in blocks] == [
        ("python", ("x = 1",), 4, 1),
        ("js", ("let y = 2;",), 4, 2),
    ]
    assert [b.of for b in blocks] == [2, 2]


def test_an_unclosed_fence_runs_to_the_end_and_indented_code_is_ignored():
    text = "    indented = True\n\n```sql\nSELECT 1;\nSELECT 2;"
    assert [b.lines for b in code_blocks(text)] == [("SELECT 1;", "SELECT 2;")]


def test_a_longer_fence_holds_a_shorter_one():
    text = "````markdown\n```python\nx = 1\n```\n````\n"
    assert [b.lines for b in code_blocks(text)] == [("```python", "x = 1", "```")]


def test_has_code_is_a_cheap_yes_or_no():
    assert has_code(fence("x = 1\n"))
    assert has_code("text\n  ~~~\ncode\n~~~")
    assert not has_code("no code here, only `inline` code")
    assert not has_code("")


# --- the closest earlier block -----------------------------------------------------------------


def test_it_compares_with_the_most_similar_earlier_block_and_names_its_turn():
    other = "import os\nprint(os.getcwd())\n"
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence(FIXED))), (3, reply(fence(other)))]
    rolled_back = FIXED.replace("        return 0.0\n", "        return None\n")
    (d,) = diff_reply(reply(fence(rolled_back)), 4, earlier)
    assert d.earlier.turn == 2
    assert 0.8 < d.similarity < 1
    assert sides(d, "replace") == (["        return 0.0"], ["        return None"])
    assert d.changed


def test_a_reply_that_rolls_back_a_fix_is_compared_with_the_fixed_code_when_closer():
    """Turn 1 buggy, turn 2 fixed (a guard) and typed, turn 3 keeps the types but drops the
    guard: turn 2 is the closer, and the guard shows as removed."""
    typed = {"def mean(xs):": "def mean(xs: list[float]) -> float:"}
    fixed = "\n".join(typed.get(line, line) for line in FIXED.splitlines()) + "\n"
    rolled_back = "\n".join(typed.get(line, line) for line in BUGGY.splitlines()) + "\n"
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence(fixed)))]
    (d,) = diff_reply(reply(fence(rolled_back)), 3, earlier)
    assert d.earlier.turn == 2
    assert sides(d, "delete")[0] == ["    if not xs:", "        return 0.0"]
    removed = [line.text for line in d.unified if line.kind == "-"]
    assert removed == ["    if not xs:", "        return 0.0"]


def test_it_keeps_to_the_same_language():
    js = "function mean(xs) {\n  return xs.reduce((a, b) => a + b) / xs.length;\n}\n"
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence(js, "javascript")))]
    (d,) = diff_reply(reply(fence(js.replace("xs.length", "xs.length || 1"), "js")), 3, earlier)
    assert d.earlier.turn == 2  # js and javascript are one language
    (d,) = diff_reply(reply(fence(BUGGY, "ruby")), 3, earlier)
    assert d.earlier is None
    assert d.message == "No earlier code in Ruby."


def test_an_unnamed_block_matches_any_language_and_any_block_matches_an_unnamed_one():
    sql = "SELECT 1;\nSELECT 2;\n"
    earlier = [(1, reply(fence(sql, "sql"))), (2, reply(fence(BUGGY, "")))]
    (d,) = diff_reply(reply(fence(FIXED, "python")), 3, earlier)
    assert d.earlier.turn == 2
    (d,) = diff_reply(reply(fence("SELECT 1;\nSELECT 3;\n", "")), 3, earlier)
    assert (d.earlier.turn, d.earlier.lang) == (1, "sql")


def test_similarity_ignores_whitespace_so_reindenting_costs_little():
    wrapped = "class Stats:\n" + "".join("    " + line + "\n" for line in BUGGY.splitlines())
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence("class Other:\n    pass\n")))]
    (d,) = diff_reply(reply(fence(wrapped)), 3, earlier)
    assert d.earlier.turn == 1
    assert d.similarity > 0.8


def test_a_tie_goes_to_the_most_recent_turn():
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence("print(1)\n"))), (3, reply(fence(BUGGY)))]
    (d,) = diff_reply(reply(fence(FIXED)), 4, earlier)
    assert d.earlier.turn == 3


def test_no_earlier_code_says_so():
    (d,) = diff_reply(reply(fence(BUGGY)), 2, [(1, "Sure, what language?")])
    assert (d.earlier, d.rows, d.unified) == (None, [], [])
    assert d.message == "No earlier code in Python."
    (d,) = diff_reply(reply(fence(BUGGY, "")), 2, [(1, "")])
    assert d.message == "No earlier code."


def test_the_same_code_again_says_so_and_shows_no_change():
    (d,) = diff_reply(reply(fence(BUGGY)), 3, [(1, reply(fence(BUGGY))), (2, "ok")])
    assert (d.earlier.turn, d.similarity, d.changed) == (1, 1.0, False)
    assert d.message == "Same code as turn 1: no line changed."


def test_each_block_of_the_reply_gets_its_own_closest_block():
    helper = "def helper():\n    return 42\n"
    earlier = [(1, reply(fence(BUGGY), fence(helper))), (2, reply(fence("x = 1\n")))]
    a, b = diff_reply(reply(fence(helper.replace("42", "43")), fence(FIXED)), 3, earlier)
    assert (a.block.position, a.earlier.turn, a.earlier.position, a.earlier.of) == (1, 1, 2, 2)
    assert (b.block.position, b.earlier.turn, b.earlier.position) == (2, 1, 1)
    assert sides(b, "insert")[1] == ["    if not xs:", "        return 0.0"]


def test_a_block_is_never_compared_with_the_same_or_a_later_reply():
    text = reply(fence(BUGGY), fence(BUGGY))
    assert diff_reply(text, 1, [])[1].earlier is None
    later = [(1, reply(fence("x = 1\n"))), (2, text), (3, reply(fence(BUGGY)))]
    assert [d.earlier.turn for d in diff_reply(text, 2, later)] == [1, 1]


def test_line_numbers_and_changed_characters():
    (d,) = diff_reply(reply(fence(FIXED)), 2, [(1, reply(fence(BUGGY)))])
    inserted = [r for r in d.rows if r.kind == "insert"]
    assert [(r.old_no, r.new_no) for r in inserted] == [(None, 2), (None, 3)]
    header = d.unified[0]
    assert (header.kind, header.text) == ("@@", "@@ -1,4 +1,6 @@")
    (d,) = diff_reply(reply(fence("def f(a, b):\n")), 2, [(1, reply(fence("def f(a):\n")))])
    (row,) = d.rows
    assert [t for t, changed in row.new if changed] == [", b"]


def test_long_unchanged_stretches_are_folded():
    body = "".join(f"line{i} = {i}\n" for i in range(40))
    (d,) = diff_reply(reply(fence(body + "end = 1\n")), 2, [(1, reply(fence(body + "end = 0\n")))])
    assert d.rows[0].kind == "skip" and d.rows[0].skipped == 37
    assert [r.kind for r in d.rows[1:]] == ["equal"] * 3 + ["replace"]


def test_hostile_text_stays_text():
    evil = '<script>alert(1)</script>\n<img src=x onerror="alert(2)">\n'
    (d,) = diff_reply(reply(fence(evil, "html")), 2, [(1, reply(fence("<p>hi</p>\n", "html")))])
    texts = ["".join(t for t, _ in r.new) for r in d.rows]
    assert texts == ["<script>alert(1)</script>", '<img src=x onerror="alert(2)">']


# --- another earlier turn, picked by hand ----------------------------------------------------


def test_a_rollback_is_closest_to_the_old_code_and_lists_the_fix_to_compare_with():
    """Turn 3 brings turn 1's bug back: the closest block is turn 1's (the same code), and
    turn 2, whose fix it undid, is offered; against turn 2 the diff shows the fix removed."""
    earlier = [
        (1, reply(fence(BUGGY))),
        (2, reply(fence(FIXED))),
        (3, reply(fence("x = 1\n", "js"))),
    ]
    (closest,) = diff_reply(reply(fence(BUGGY)), 4, earlier)
    assert (closest.earlier.turn, closest.changed, closest.others) == (1, False, [2])
    (picked,) = diff_reply(reply(fence(BUGGY)), 4, earlier, against=2)
    assert (picked.earlier.turn, picked.others) == (2, [1])
    removed, added = sides(picked, "delete")
    assert removed == ["    if not xs:", "        return 0.0"] and added == ["", ""]


def test_against_a_turn_without_comparable_code_finds_nothing():
    earlier = [(1, reply(fence(BUGGY))), (2, reply(fence("let y = 2;\n", "js")))]
    (d,) = diff_reply(reply(fence(FIXED)), 3, earlier, against=2)
    assert d.earlier is None and d.message == "No earlier code in Python." and d.others == [1]
