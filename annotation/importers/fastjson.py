"""JSON decoding for the importers: orjson where it gives what json gives, the stdlib
elsewhere (issue 10: parsing is most of an import's time on the Python side)."""

from __future__ import annotations

import json
from typing import Any

import orjson

# 19 digits in a row: an integer this long may be beyond 64 bits, which orjson reads as a
# float (json as an int), so a text with one where a JSON value starts goes to the stdlib
# decoder (_big_int). The runs are found in a copy of the text's bytes with every digit a
# "9" and every other byte a blank: bytes.translate and a substring search take a few
# microseconds a record, where a regular expression takes longer than the parse.
_DIGIT_MARKS = bytes(57 if 48 <= byte <= 57 else 32 for byte in range(256))
_LONG_RUN = b"9" * 19
_BEFORE_NUMBER = frozenset(b":,[ \t\n\r")
_MINUS = ord("-")


def _big_int(text: str) -> bool:
    """True when `text` may hold an integer orjson would read as a float: a run of 19 or
    more digits at the start of a JSON value. A string holding such a run (`"id 1234..."`)
    is a false alarm, which costs only a slower parse; a hash in a string (`"0f1e..."`,
    after a quote or a letter) is not one."""
    data = text.encode("utf-8", "surrogatepass")
    marks = data.translate(_DIGIT_MARKS)
    start = marks.find(_LONG_RUN)
    while start != -1:
        before = start - 1
        if before >= 0 and data[before] == _MINUS:
            before -= 1
        if before < 0 or data[before] in _BEFORE_NUMBER:
            return True
        end = marks.find(b" ", start)  # the end of this run: the next run starts after it
        if end == -1:
            return False
        start = marks.find(_LONG_RUN, end)
    return False


def loads(text: str) -> Any:
    """json.loads(text), as fast as orjson can make it: the same value, or the same error
    (json.JSONDecodeError, RecursionError) worded as the stdlib words it. orjson decodes
    what the stdlib decodes to the same values, except integers beyond 64 bits (sent to
    the stdlib, _big_int), and refuses more (NaN, Infinity, lone surrogate escapes, 1e400,
    nesting over 1024): whatever it refuses is decoded again by the stdlib, which accepts
    it or raises the error the caller words (readers.parse_record)."""
    if not _big_int(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
