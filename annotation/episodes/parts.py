"""Which stored text an evidence quote lies in, and finding a quote there.

A turn's parts: `user` (Turn.user_text), `reply` (Turn.reply_text) and its reply parts
(Turn.reply_parts) of kind `thinking`, `tool_call` or `tool_result` (the importers' raw
kinds mapped as the card's rendering maps them). A reply part's text is what the card
shows of it, as stored: a thinking part's text; a tool call's arguments (text as given,
structured arguments as JSON indented by 2, as the card prints them); a tool result's
content (likewise). Offsets are [start, end) in Python characters of that text."""

from __future__ import annotations

import re
from functools import lru_cache

from ..reply_parts import REPLY_PART_KINDS, kind_of, reply_part_text

PARTS = ("user", "reply", *REPLY_PART_KINDS)

__all__ = ["PARTS", "REPLY_PART_KINDS", "find_quote", "kind_of", "reply_part_text", "texts_of"]


def texts_of(part: str, user_text: str, reply_text: str, reply_parts: list) -> list:
    """[(part_index, text)] a quote of `part` may lie in: one text for user and reply
    (index None), every reply part of that kind for the others, in order."""
    if part == "user":
        return [(None, user_text)]
    if part == "reply":
        return [(None, reply_text)]
    return [(i, reply_part_text(p)) for i, p in enumerate(reply_parts or []) if kind_of(p) == part]


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """[start, end) of `quote` in `text`: exactly, else with white space normalised (each
    run of white space in the quote matches any run in the text, and the quote's leading and
    trailing white space is ignored), the span then being the stored text's, from the first
    to the last character matched. None when it is not there, or the quote is blank."""
    words = quote.split()
    if not words:
        return None
    at = text.find(quote)
    if at != -1:
        return at, at + len(quote)
    found = _spaced(tuple(words)).search(text)
    return None if found is None else (found.start(), found.end())


@lru_cache(maxsize=4096)
def _spaced(words: tuple[str, ...]) -> re.Pattern:
    """The words with any run of white space between them (a file repeats its quotes)."""
    return re.compile(r"\s+".join(map(re.escape, words)))
