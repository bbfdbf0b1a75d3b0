"""List previews show a message's words, not its Markdown (issue 23: the lists showed `**`,
fences and `[text](url)` raw): annotation/plaintext.py and the `preview` template filter."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from hypothesis import given
from hypothesis import strategies as st

from annotation.plaintext import ELLIPSIS, plain_text, preview


@pytest.mark.parametrize(
    "markdown, plain",
    [
        (
            "Some **bold** and *emphasis* and __more__ and _this_",
            "Some bold and emphasis and more and this",
        ),
        ("# A heading\n\nthen text", "A heading then text"),
        ("## Why?\nBecause", "Why? Because"),
        ("See [the docs](https://example.org/docs) now", "See the docs now"),
        ("![a chart](https://example.org/c.png) below", "a chart below"),
        ("<https://example.org>", "https://example.org"),
        ("Run `make run` first", "Run make run first"),
        (
            "Fix this:\n\n```python\ndef f():\n    return 1\n```\nthanks",
            "Fix this: def f(): return 1 thanks",
        ),
        ("    indented code\n\nafter", "indented code after"),
        ("- one\n- two\n\n1. three", "one two three"),
        ("> quoted\n> text", "quoted text"),
        ("~~struck~~ out", "struck out"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a b 1 2"),
        ("line one\nline two\n\n\nline three", "line one line two line three"),
        # literal characters stay: an escaped star, a lone star, a tag (raw HTML is off)
        (r"a \*literal\* star", "a *literal* star"),
        ("2 * 3 = 6", "2 * 3 = 6"),
        ("<b>not bold</b>", "<b>not bold</b>"),
        ("", ""),
    ],
)
def test_markdown_becomes_its_words(markdown, plain):
    assert plain_text(markdown) == plain


def test_a_long_text_is_cut_with_an_ellipsis_to_the_limit():
    text = "**Please** " + "word " * 50
    cut = preview(text, 30)
    assert len(cut) == 30 and cut.endswith(ELLIPSIS)
    assert cut.startswith("Please word word")
    assert preview("short *text*", 30) == "short text"


@given(st.text(max_size=400), st.integers(min_value=0, max_value=200))
def test_a_preview_is_never_longer_than_its_limit(text, limit):
    out = preview(text, limit)
    assert len(out) <= limit
    assert "\n" not in out


# words with no Markdown marker in them, joined by single spaces: the preview is the text
_word = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789.,?", min_size=1, max_size=12
)


# a first word of digits and a dot or parenthesis opens an ordered list ("1. a" reads "a")
_LIST_MARKER = re.compile(r"\d{1,9}[.)]")


@given(
    st.lists(_word, min_size=1, max_size=30).filter(lambda w: not _LIST_MARKER.fullmatch(w[0])),
    st.integers(min_value=1, max_value=120),
)
def test_plain_text_comes_out_as_it_went_in(words, limit):
    text = " ".join(words)
    out = preview(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        assert out.endswith(ELLIPSIS) and text.startswith(out[:-1])


def test_the_template_filter_escapes_what_it_shows():
    rendered = Template("{% load cardsort %}{{ text|preview:40 }}").render(
        Context({"text": "**Why** does <script>x</script> fail?"})
    )
    assert rendered == "Why does &lt;script&gt;x&lt;/script&gt; fail?"


@pytest.mark.parametrize("text", ["0.", "1)", "-", "#", ">", "* ", "  -  "])
def test_a_message_of_markers_alone_reads_as_itself(text):
    """Found by the property above: "0." (an empty ordered list) previewed as nothing."""
    assert preview(text, 40) == " ".join(text.split())
