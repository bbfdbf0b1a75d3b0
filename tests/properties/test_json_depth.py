"""annotation/jsondepth.py tells a JSON text's nesting from its brackets alone: for any JSON
value, written any way json writes it, it says "too deep" exactly when the value nests past
the limit, whatever brackets, quotes and backslashes its strings hold."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from annotation.jsondepth import too_deep

# strings rich in what a scanner could mistake for structure
TRICKY = st.text(alphabet=st.sampled_from('[[[{{"\\]}/:,\n\t aé\u2028\x00'), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=40,
)


def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def wrapped(value, levels: int):
    for i in range(levels):
        value = [value] if i % 2 else {"k[": value}
    return value


@given(VALUES, st.integers(0, 30), st.integers(-2, 2), st.booleans(), st.booleans())
def test_it_is_too_deep_exactly_when_the_value_nests_past_the_limit(
    value, levels, around, ascii_only, indent
):
    value = wrapped(value, levels)
    limit = max(0, depth(value) + around)  # the limit at the value's depth, or about
    text = json.dumps(value, ensure_ascii=ascii_only, indent=2 if indent else None)

    assert too_deep(text, limit) == (depth(value) > limit)
    assert too_deep(text.encode(), limit) == (depth(value) > limit)


def test_a_very_deep_text_is_told_without_recursion():
    assert too_deep("[" * 1_000_000 + "]" * 1_000_000)
    assert not too_deep('["' + "[" * 1_000_000 + '"]')
