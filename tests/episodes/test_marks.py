"""Evidence quotes marked in place (annotation/episodes/marks.py): the span's text is what
the <mark>s hold, across emphasis, code and lines; the HTML stays sanitized and well formed;
the text's own private-use characters never count as ends."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from annotation.episodes.marks import CLOSE, OPEN, marked, with_ends
from annotation.rendering import code_html, message_html


def marks_of(html: str) -> str:
    return "".join(unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", html, flags=re.S))


class _Balance(HTMLParser):
    VOID = {"br", "hr", "img", "input", "meta", "link"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.ok = True

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.ok = False


def balanced(html: str) -> bool:
    parser = _Balance()
    parser.feed(html)
    return parser.ok and not parser.stack


def test_a_span_across_emphasis_is_marked_piece_by_piece():
    text = "I **changed** the API of module 1."
    start = text.index("I **")
    end = text.index(" of")
    html = marked(str(message_html(with_ends(text, [(start, end)]))))
    assert "<mark>I </mark><strong><mark>changed</mark></strong><mark> the API</mark>" in html
    assert balanced(html) and OPEN not in html and CLOSE not in html


def test_a_span_in_highlighted_code_keeps_every_token_and_its_text():
    code = '{\n  "command": "rm -rf tests/"\n}'
    start = code.index("rm")
    html = marked(str(code_html(with_ends(code, [(start, start + len("rm -rf tests/"))]), "json")))
    assert marks_of(html) == "rm -rf tests/" and balanced(html)


def test_hostile_text_stays_text_and_its_own_ends_count_for_nothing():
    text = f"<script>alert(1)</script> x{OPEN}y{CLOSE} keep this"
    start = text.index("keep")
    html = marked(str(message_html(with_ends(text, [(start, start + 4)]))))
    assert "<script>" not in html and marks_of(html) == "keep"


def test_overlapping_and_out_of_range_spans_are_merged_and_clipped():
    assert with_ends("abcdef", [(1, 3), (2, 5), (4, 99), (7, 9)]) == f"a{OPEN}bcdef{CLOSE}"


WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "y7"]), min_size=2)


@given(words=WORDS, data=st.data())
def test_the_marks_hold_the_spans_words_in_plain_prose(words, data):
    text = " ".join(words)
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i, len(words) - 1))
    start = len(" ".join(words[:i])) + (1 if i else 0)
    end = len(" ".join(words[: j + 1]))
    html = marked(str(message_html(with_ends(text, [(start, end)]))))
    assert marks_of(html) == text[start:end]
    assert balanced(html)
