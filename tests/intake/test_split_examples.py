"""The worked examples file (intake/llm.py read_examples) and the answer's reading
(parse_answer), over any input: a valid example comes back as written, anything else is an
ExamplesError whose every line names the file, the line and the field; an answer's turns out
of range are problems, never points."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.intake.llm import (
    MAX_EXAMPLES,
    MAX_EXAMPLES_BYTES,
    ExamplesError,
    parse_answer,
    read_examples,
)

text = st.text(max_size=30)
turns = st.lists(st.fixed_dictionaries({"user": text, "assistant": text}), min_size=1, max_size=6)


@st.composite
def examples(draw) -> dict:
    its_turns = draw(turns)
    n = len(its_turns)
    points = draw(st.lists(st.integers(2, n), max_size=3)) if n > 1 else []
    return {
        "turns": its_turns,
        "splits": [{"before_turn": k, "reason": draw(text)} for k in points],
        "drop_turns": draw(st.lists(st.integers(1, n), max_size=3)),
    }


@given(st.lists(examples(), min_size=1, max_size=5), st.booleans())
def test_valid_examples_come_back_as_written(written, ascii_only):
    lines = (json.dumps(e, ensure_ascii=ascii_only) for e in written)
    data = "\r\n".join(lines).encode()
    assert read_examples(data, "ex.jsonl") == written


def test_a_line_separator_inside_a_string_is_no_line_break():
    example = {"turns": [{"user": "a\u2028b\x1c", "assistant": "c"}], "splits": []}
    data = ("\n\n" + json.dumps(example, ensure_ascii=False)).encode()
    assert read_examples(data, "ex.jsonl")[0]["turns"][0]["user"] == "a\u2028b\x1c"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=False) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=12,
)
lines = st.one_of(
    json_values.map(json.dumps),
    examples().map(json.dumps),
    st.dictionaries(
        st.sampled_from(["turns", "splits", "drop_turns", "other"]), json_values, max_size=4
    ).map(json.dumps),
    text,
)


@given(st.lists(lines, min_size=1, max_size=6))
def test_any_file_is_read_or_refused_line_by_line(file_lines):
    data = "\n".join(line.replace("\n", " ").replace("\r", " ") for line in file_lines)
    try:
        got = read_examples(data.encode(), "ex.jsonl")
    except ExamplesError as exc:
        assert exc.lines
        for line in exc.lines:
            assert line.startswith("ex.jsonl:"), line
            head = line.split(": ", 1)[0]  # ex.jsonl:N, or the file itself
            assert head == "ex.jsonl" or head.split(":")[1].isdigit(), line
    else:
        # read whole: every line that is not blank became one example, in order
        written = [json.loads(line) for line in data.split("\n") if line.strip()]
        assert [e["turns"] for e in got] == [w["turns"] for w in written]
        for example in got:
            assert set(example) == {"turns", "splits", "drop_turns"}


@pytest.mark.parametrize(
    "data, error",
    [
        (b"\xff\xfe", "ex.jsonl: not UTF-8 text"),
        (b"\n\n", "ex.jsonl: no example in the file"),
        (b"x" * (MAX_EXAMPLES_BYTES + 1), f"at most {MAX_EXAMPLES_BYTES}"),
        (b'{"turns": [{"user": "a", "assistant": "b"}], "splits": [true]}', "ex.jsonl:1: splits[0]"),
        (b'{"turns": [{"user": "a", "assistant": "b"}], "splits": [], "drop_turns": 2}',
         "ex.jsonl:1: drop_turns: not a list"),
    ],
)  # fmt: skip
def test_what_is_refused_says_where(data, error):
    with pytest.raises(ExamplesError) as caught:
        read_examples(data, "ex.jsonl")
    assert any(error in line for line in caught.value.lines), caught.value.lines


def test_too_many_examples_are_refused():
    line = json.dumps({"turns": [{"user": "a", "assistant": "b"}], "splits": []})
    with pytest.raises(ExamplesError, match=f"at most {MAX_EXAMPLES} are sent"):
        read_examples("\n".join([line] * (MAX_EXAMPLES + 1)).encode(), "ex.jsonl")


@given(
    n_turns=st.integers(1, 8),
    points=st.lists(st.integers(-2, 12), max_size=5),
    drops=st.lists(st.integers(-2, 12), max_size=5),
)
def test_an_answer_keeps_only_turns_in_range(n_turns, points, drops):
    data = {
        "splits": [{"before_turn": k, "reason": " r "} for k in points],
        "drop_turns": drops,
    }
    found = parse_answer(data, n_turns)
    assert all(2 <= k <= n_turns for k in found.points)
    assert set(found.points) == {k for k in points if 2 <= k <= n_turns}
    assert all(r == "r" for r in found.points.values())
    in_range = {k for k in drops if 1 <= k <= n_turns}
    everything = in_range == set(range(1, n_turns + 1))
    assert found.drops == ([] if everything else sorted(in_range))
    out_of_range = sum(not 2 <= k <= n_turns for k in points) + sum(
        not 1 <= k <= n_turns for k in drops
    )
    assert len(found.problems) == out_of_range + everything
