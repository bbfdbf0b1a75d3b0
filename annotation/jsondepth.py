"""How deep a JSON text nests, told from its brackets without parsing it.

Python's json module recurses once per level and raises RecursionError somewhere below 1,000
levels (how far below depends on the stack already in use), which nothing catches as bad
input: an API body, a form field or a message's code block nested that deep would be a 500.
Whatever parses JSON from a user or from imported text asks `too_deep` first and refuses the
text. The limit is the importers' (importers/readers.py MAX_DEPTH): no real record, body or
code block comes close to it."""

from __future__ import annotations

import re
from itertools import accumulate

MAX_DEPTH = 100

# A string, escapes included, is skipped whole: brackets inside it do not nest. An
# unterminated one runs to the end of the text (json.loads refuses the text anyway).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def too_deep(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON `text` opens more than `limit` arrays or objects inside each other.
    Linear in the text, in C loops but for the bracket walk, which stops at the first level
    past the limit; a text with no more opening brackets than `limit` is not walked at all."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", text))
    depths = accumulate(map(_STEP.__getitem__, brackets))
    return next(filter(limit.__lt__, depths), None) is not None
