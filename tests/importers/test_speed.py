"""The import's fast paths (issue 10 point 5) give exactly what the slow ones gave: orjson
for reading JSON lines and writing COPY's JSON, the fingerprint hashed in one call."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.importers.base import BuiltConversation, BuiltTurn
from annotation.importers.fastjson import loads as fast_loads
from annotation.importers.records import BadJSON, BadRecord, json_error, parse_record
from annotation.importers.writer import _json

# JSON values as json.loads gives them: any integer (beyond 64 bits too), any float
# (NaN and the infinities too, which json writes as NaN / Infinity), any text (lone
# surrogates too), nested.
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**62))
    | st.floats()
    | st.text()
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


def same(a, b) -> bool:
    """Equal and of the same types all the way down (1 == 1.0 is not good enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (
            math.isnan(a) and math.isnan(b) or a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def stdlib(text: str):
    """parse_record's decoding before orjson: the reference."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(json_error(exc)) from None


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(values, st.booleans(), st.sampled_from([None, 0, 2]))
def test_loads_reads_every_json_text_as_the_stdlib_does(value, ascii_only, indent):
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert same(fast_loads(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551616",  # one beyond u64: orjson reads a float
        '{"a": -9223372036854775809}',  # one below i64: orjson reads a float
        "[1,18446744073709551616]",
        '{"a":[\n123456789012345678901234567890]}',
        '{"id": "x 12345678901234567890", "n": 1}',  # a false alarm: still right
        '{"a": NaN, "b": -Infinity, "c": 1e400}',
        '["\\ud800"]',
    ],
)
def test_loads_gives_the_stdlib_value_where_orjson_would_differ_or_refuse(text):
    assert same(fast_loads(text), json.loads(text))


@settings(max_examples=300, deadline=None)
@given(values.filter(lambda v: isinstance(v, dict | list)), st.data())
def test_bad_json_is_worded_as_the_stdlib_words_it(value, data):
    text = json.dumps(value)
    cut = data.draw(st.integers(0, len(text) - 1))
    junk = data.draw(st.sampled_from(["", "}", ",", "x", '"', "\\", "]]", "\x01"]))
    broken = text[:cut] + junk
    try:
        expected = stdlib(broken)
    except BadJSON as exc:
        with pytest.raises(BadJSON) as raised:
            parse_record(broken)
        assert str(raised.value) == str(exc)
    else:
        assert same(parse_record(broken), expected)


def test_too_deep_for_orjson_is_still_too_deep():
    with pytest.raises(BadRecord, match="nested deeper"):
        parse_record("[" * 5000 + "]" * 5000)


@settings(max_examples=400, deadline=None)
@given(values)
def test_copy_json_is_the_same_value_as_json_dumps(value):
    try:
        expected = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            _json(value)
        return
    text = _json(value)
    if _has_non_finite(value):
        # what PostgreSQL refuses is refused as before, not turned into null
        assert text == expected
    assert same(json.loads(text), json.loads(expected))


def _has_non_finite(value) -> bool:
    """A float NaN or infinity anywhere in the value (the string "NaN" is no such thing)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False


def test_the_string_nan_is_no_non_finite_number():
    assert _json([False, "NaN"]) == '[false,"NaN"]'  # orjson's text: a string, not a NaN
    assert _has_non_finite([False, "NaN"]) is False
    assert _has_non_finite({"a": [1.0, float("inf")]}) is True


def test_copy_json_leaves_nan_and_big_integers_to_the_stdlib():
    assert _json({"score": float("nan")}) == '{"score": NaN}'
    assert _json([2**70, None]) == f"[{2**70}, null]"
    assert _json({1: "a"}) == '{"1": "a"}'  # orjson refuses keys that are not strings
    assert _json({"a": [1, "é"]}) == '{"a":[1,"é"]}'  # orjson's


def reference_fingerprint(c: BuiltConversation) -> str:
    """compute_fingerprint as it was first written (a digest update a piece): stored
    fingerprints must keep matching what a re-import computes."""
    digest = hashlib.sha256()

    def put(text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(data))
        digest.update(data)

    put(c.source_format)
    put(c.external_id if c.id_from_data else "")
    put("" if c.source_line is None else str(c.source_line))
    put(c.system_prompt)
    put(json.dumps(c.preamble, ensure_ascii=False, sort_keys=True) if c.preamble else "")
    put(str(len(c.turns)))
    for turn in c.turns:
        put(turn.user_text)
        put(turn.reply_text)
        parts = turn.reply_parts
        put(json.dumps(parts, ensure_ascii=False, sort_keys=True) if parts else "")
        put("m" if turn.reply_missing else "")
    return digest.hexdigest()


parts = st.lists(
    st.dictionaries(st.text(max_size=4), st.text(max_size=4) | st.integers()), max_size=2
)
turns = st.builds(
    BuiltTurn,
    index=st.just(1),
    user_text=st.text(),
    reply_text=st.text(),
    reply_parts=parts,
    reply_missing=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    st.builds(
        BuiltConversation,
        external_id=st.text(max_size=10),
        source_format=st.sampled_from(["wildchat", "native"]),
        source_file=st.text(max_size=5),
        source_line=st.none() | st.integers(0, 10**6),
        location=st.just("x"),
        system_prompt=st.text(),
        preamble=parts,
        metadata=st.just({}),
        turns=st.lists(turns, max_size=4),
        check_duplicate=st.booleans(),
        id_from_data=st.booleans(),
    )
)
def test_the_fingerprint_is_the_value_it_always_was(conversation):
    assert conversation.compute_fingerprint() == reference_fingerprint(conversation)


def test_a_stored_fingerprint_still_matches():
    turn = BuiltTurn(index=1, user_text="hi", reply_text="hello", reply_missing=False)
    conversation = BuiltConversation(
        "c1", "wildchat", "a.jsonl", 3, "a.jsonl:3", "", [], {}, [turn], False
    )
    assert conversation.compute_fingerprint() == (
        "6229eb0dc338ba5aca3a90c94d9d694a94b0d2f7f9fa3aca2f15d2e9bc236e56"
    )


def test_long_digit_runs_are_told_apart_cheaply():
    from annotation.importers.fastjson import _big_int

    assert _big_int('{"n": 12345678901234567890}')
    assert _big_int("[1,-1234567890123456789]")
    assert _big_int("12345678901234567890")
    # a hash or an id in a string is no number: orjson keeps its speed there
    assert not _big_int('{"hashed_ip": "' + "0" * 60 + 'a1", "n": 123456789012345678}')
    assert not _big_int('{"x": "ab1234567890123456789012"}')
