"""A message's Markdown as one line of plain text, for the previews in lists (my cards, the
moderation queue, the open-sort board): what a reader of the rendered message sees, not the
markers (`**`, `#`, fences, `[text](url)`), cut to a number of characters.

The text goes through the same parser as the card (annotation/rendering.py's options: raw
HTML off, so a tag in the text stays text); only the words are kept: emphasis, headings and
list markers go, a link or image becomes its text, inline code and code blocks keep their
code. Whitespace, line breaks included, collapses to single spaces."""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt

ELLIPSIS = "…"
_SPACES = re.compile(r"\s+")
# a preview reads the text's start only: parsing a whole log for 90 characters would cost
# every row of a list its length
_READ = 4_000

_MD = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False}).enable(
    ["table", "strikethrough"]
)


def _words(tokens) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if token.children is not None:
            out.extend(_words(token.children))
        elif token.type in ("text", "code_inline", "html_inline", "html_block"):
            out.append(token.content)
        elif token.type in ("fence", "code_block"):
            out.append(f" {token.content} ")
        elif token.type in ("softbreak", "hardbreak") or token.nesting != 0 or token.block:
            # a break, or a block's edge (paragraph, heading, list item, cell): words apart
            out.append(" ")
    return out


@lru_cache(maxsize=1024)
def plain_text(text: str) -> str:
    """The words of Markdown `text` on one line, markers removed."""
    if not text:
        return ""
    tokens = _MD.parse(text[:_READ])
    words = _SPACES.sub(" ", "".join(_words(tokens))).strip()
    # a message that is nothing but markers ("0.", "-", "#") reads as itself, not as nothing
    return words or _SPACES.sub(" ", text[:_READ]).strip()


def preview(text: str, limit: int) -> str:
    """`plain_text(text)` cut to at most `limit` characters, an ellipsis ending a cut one."""
    plain = plain_text(text or "")
    if len(plain) <= limit or limit <= 0:
        return plain if limit > 0 else ""
    return plain[: limit - 1].rstrip() + ELLIPSIS
