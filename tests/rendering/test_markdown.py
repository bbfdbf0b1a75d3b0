"""Conversation text is Markdown, shown as HTML: every construct a reviewer needs (code
highlighted by language, tables, lists, links with their real target) and nothing the text's
author could use against the annotator (scripts, event handlers, javascript: links, images
that load, headings that outrank the page's). The text is hostile input."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.rendering import guess_language, message_html

ALLOWED_TAGS = {
    "div", "p", "br", "hr", "em", "strong", "s", "code", "pre", "span", "a", "ul", "ol", "li",
    "blockquote", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
REL = "nofollow noopener noreferrer"


class Tree(HTMLParser):
    """The elements (tag, attributes) of an HTML fragment, and its text as a reader sees it."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for t, attrs in self.elements if t == tag]


def render(text: str) -> Tree:
    tree = Tree(message_html(text))
    assert_safe(tree)
    return tree


def assert_safe(tree: Tree) -> None:
    """Nothing in the HTML can run, load or navigate by itself."""
    for tag, attrs in tree.elements:
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name in {
                "href",
                "title",
                "rel",
                "class",
                "data-lang",
                "start",
                "tabindex",
            }  # no style: the Content-Security-Policy refuses inline styles (issue 23)
            if name == "tabindex":
                assert (tag, value) == ("pre", "0")
            if name == "class" and tag in ("th", "td"):
                assert value in ("align-left", "align-center", "align-right"), value
        if tag == "a":
            assert re.match(r"(https?|mailto):", attrs["href"], re.I), attrs["href"]
            assert attrs["rel"] == REL
        else:
            assert "href" not in attrs
        if tag == "pre":
            assert re.fullmatch(r"[\w+#.-]*", attrs.get("data-lang", "")), attrs


# --- what a reviewer reads -----------------------------------------------------------------


def test_it_renders_emphasis_strikethrough_and_inline_code():
    tree = render("**bold**, *it*, ~~gone~~ and `a<b> && c`")
    assert [t for t, _ in tree.elements if t in {"strong", "em", "s", "code"}] == [
        "strong",
        "em",
        "s",
        "code",
    ]
    assert "a<b> && c" in tree.text


def test_it_keeps_single_line_breaks_of_chat_text():
    tree = render("first line\nsecond line")
    assert len(tree.all("br")) == 1
    assert "first line" in tree.text and "second line" in tree.text


def test_it_renders_lists_nested_and_numbered_from_their_start():
    tree = render("3. three\n4. four\n   - sub a\n   - sub b\n")
    assert tree.all("ol") == [{"start": "3"}]
    assert len(tree.all("ul")) == 1 and len(tree.all("li")) == 4


def test_it_renders_tables_with_their_alignment_as_classes():
    # a class the page's stylesheet aligns by, not a style attribute the policy refuses
    tree = render("| name | n | c |\n|:-----|--:|:-:|\n| a | 1 | x |\n| b | 22 | y |\n")
    assert len(tree.all("th")) == 3 and len(tree.all("td")) == 6
    assert [c.get("class") for c in tree.all("td")[:3]] == [
        "align-left",
        "align-right",
        "align-center",
    ]
    assert [c.get("class") for c in tree.all("th")] == ["align-left", "align-right", "align-center"]
    assert all("style" not in c for c in tree.all("td") + tree.all("th"))
    assert tree.all("table") == [{}]


def test_it_renders_blockquotes_and_rules():
    tree = render("> quoted\n\n---\n\nafter")
    assert tree.all("blockquote") and tree.all("hr")


def test_headings_never_outrank_the_pages_own():
    tree = render("# one\n\n## two\n\n### three\n\n###### six")
    assert [t for t, _ in tree.elements if t.startswith("h")] == ["h4", "h5", "h6", "h6"]


def test_a_link_shows_its_real_target_beside_its_text():
    tree = render("See [the docs](https://real.example/x?a=1&b=2 'Docs').")
    (a,) = tree.all("a")
    assert a["href"] == "https://real.example/x?a=1&b=2"
    assert a["rel"] == REL and a["title"] == "Docs"
    assert "the docs (https://real.example/x?a=1&b=2)" in tree.text


def test_a_link_whose_text_is_another_url_shows_the_real_one():
    tree = render("[https://bank.example/login](https://evil.example/phish)")
    assert "https://bank.example/login (https://evil.example/phish)" in tree.text


def test_a_link_whose_text_is_its_target_is_shown_once():
    tree = render("<https://a.example/x> and <someone@mail.example>")
    assert [a["href"] for a in tree.all("a")] == [
        "https://a.example/x",
        "mailto:someone@mail.example",
    ]
    assert tree.text.count("a.example/x") == 1 and tree.text.count("someone@") == 1


def test_a_link_to_an_international_domain_shows_its_punycode():
    # a homograph (Cyrillic a) looks like the real host; the shown target tells them apart
    tree = render("[paypal](https://p\u0430ypal.example/)")
    assert "(https://xn--pypal-4ve.example/)" in tree.text


def test_a_relative_link_is_text_not_a_link_to_this_site():
    tree = render("[admin](/admin/) and [top](#top)")
    assert tree.all("a") == []
    assert "[admin](/admin/)" in tree.text


def test_an_image_is_never_loaded_but_shown_with_its_alt_and_url():
    tree = render("![a cat](https://img.example/cat.png)")
    assert tree.all("img") == []
    (a,) = tree.all("a")
    assert a["href"] == "https://img.example/cat.png"
    assert "image: a cat (https://img.example/cat.png)" in tree.text


# --- code ----------------------------------------------------------------------------------


def test_a_fenced_block_is_highlighted_by_its_language_with_its_lines_kept():
    code = "def f(x):\n\n    return x  # why\n"
    html = message_html(f"Here:\n\n```python\n{code}```\n")
    tree = render(f"Here:\n\n```python\n{code}```\n")
    (pre,) = tree.all("pre")
    assert pre["data-lang"] == "python"
    assert '<span class="k">def</span>' in html and '<span class="c1"># why</span>' in html
    assert "def f(x):\n\n    return x  # why" in tree.text


def test_a_code_block_is_reached_with_the_keyboard_to_scroll_it():
    tree = render("```\nx\n```\n\n    y = 2\n")
    assert [pre["tabindex"] for pre in tree.all("pre")] == ["0", "0"]


def test_a_tilde_fence_and_an_alias_are_highlighted_too():
    tree = render("~~~js\nconst x = 1;\n~~~")
    assert tree.all("pre")[0]["data-lang"] == "js"
    assert {"class": "kd"} in tree.all("span")


@pytest.mark.parametrize(
    "code, lang",
    [
        ("import os\n\ndef main():\n    print(os.getcwd())\n", "python"),
        ("const xs = [1, 2];\nfunction f(a) {\n  return a.map(b => b * 2);\n}\n", "javascript"),
        ('#include <stdio.h>\nint main(void) {\n  printf("hi\\n");\n  return 0;\n}\n', "c"),
        ('package main\n\nimport "fmt"\n\nfunc main() {\n\tx := 1\n\tfmt.Println(x)\n}\n', "go"),
        (
            'fn main() {\n    let mut v: Vec<i32> = Vec::new();\n    println!("{:?}", v);\n}\n',
            "rust",
        ),
        (
            "public class A {\n  public static void main(String[] a) {\n    System.out.println(1);\n  }\n}\n",
            "java",
        ),
        ('#!/bin/bash\nset -e\nfor f in *.txt; do\n  echo "$f"\ndone\n', "bash"),
        ("SELECT name, count(*) FROM users WHERE age > 3 GROUP BY name;\n", "sql"),
        ('{"a": [1, 2], "b": {"c": null}}\n', "json"),
        ('<div class="x">\n  <p>hi</p>\n</div>\n', "html"),
        ("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n", "diff"),
    ],
)
def test_a_block_without_a_language_is_guessed(code, lang):
    assert guess_language(code) == lang
    tree = render(f"```\n{code}```")
    assert tree.all("pre")[0]["data-lang"] == lang
    assert tree.all("span"), "highlighted"


def test_prose_in_a_block_is_not_guessed_as_code():
    assert guess_language("Dear team,\nthe meeting moved to Friday.\n") == ""
    tree = render("```\nDear team,\nthe meeting moved to Friday.\n```")
    assert tree.all("pre") == [{"data-lang": "", "tabindex": "0"}] and tree.all("span") == []


def test_a_block_built_to_make_the_guess_backtrack_is_answered_at_once():
    # A comment line, then long words on many lines: a signal that crossed lines with nested
    # repeats backtracked exponentially on it (this test never ended, it did not fail).
    block = "# " + "\n".join(["abcdefghij" * 3] * 30)
    assert guess_language(block) == ""
    assert message_html(f"```\n{block}\n```")


def test_a_block_of_json_nested_too_deep_is_shown_as_text():
    # the guess asked json.loads whether the block is JSON: a RecursionError, the card a 500
    deep = "[" * 5_000 + "]" * 5_000
    tree = render(f"```\n{deep}\n```")
    assert deep in tree.text


def test_an_indented_block_is_code_and_guessed():
    tree = render("Run:\n\n    import sys\n    def main():\n        print(sys.argv)\n")
    assert tree.all("pre")[0]["data-lang"] == "python"
    assert "def main():\n    print(sys.argv)" in tree.text


def test_a_fence_in_an_unknown_language_is_still_shown_whole():
    tree = render("```brainfun\n+++[>+<-]\n```")
    assert tree.all("pre")[0]["data-lang"] == "brainfun"
    assert "+++[>+<-]" in tree.text


def test_a_huge_block_is_shown_whole_but_plain():
    code = "x = 1\n" * 20_000
    tree = render(f"```python\n{code}```")
    assert tree.all("pre")[0]["data-lang"] == "python" and tree.all("span") == []
    assert tree.text.count("x = 1") == 20_000


def test_an_unclosed_fence_runs_to_the_end_as_code():
    tree = render("text\n```python\nx = 1\ny = 2")
    assert "x = 1\ny = 2" in tree.text and tree.all("pre")


# --- hostile text ---------------------------------------------------------------------------

HOSTILE_HTML = [
    "<script>window.pwned = 1</script>",
    "<img src=x onerror=window.pwned=1>",
    "<svg onload=window.pwned=1>",
    "<iframe src=https://evil.example></iframe>",
    '<a href="javascript:window.pwned=1">click</a>',
    "<style>body{display:none}</style>",
    "<!-- comment --><b onclick=x>bold</b>",
    '<div onmouseover="window.pwned=1">\n\n**inside**\n\n</div>',
    "<math><mi xlink:href=javascript:alert(1)>x</mi></math>",
]


@pytest.mark.parametrize("hostile", HOSTILE_HTML)
def test_raw_html_is_shown_as_text_never_as_html(hostile):
    tree = render(hostile)
    # the sanitizer's allowlist is the second net; the first is that no tag comes through
    assert [t for t, _ in tree.elements if t not in {"div", "p", "strong", "br"}] == []
    first = hostile.split(">")[0] + ">"
    assert first in tree.text


@pytest.mark.parametrize(
    "link",
    [
        "[x](javascript:window.pwned=1)",
        "[x](JAVASCRIPT:window.pwned=1)",
        "[x](JavaScript:window.pwned=1)",
        "[x](jav&#x09;ascript:window.pwned=1)",
        "[x](jav&#9;ascript:window.pwned=1)",
        "[x](  javascript:window.pwned=1  )",
        "[x](<javascript:window.pwned=1>)",
        "[x](%6Aavascript:window.pwned=1)",
        "[x](java\\script:window.pwned=1)",
        "<javascript:window.pwned=1>",
        "[x][r]\n\n[r]: javascript:window.pwned=1",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](vbscript:msgbox(1))",
        "[x](file:///etc/passwd)",
        "![x](javascript:window.pwned=1)",
        "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    ],
)
def test_a_dangerous_link_is_shown_as_text_never_as_a_link(link):
    tree = render(link)
    assert tree.all("a") == [] and tree.all("img") == []
    assert re.search(r"(?i)script|data:|file:", tree.text)


def test_a_link_title_cannot_inject_an_attribute():
    tree = render('[x](https://a.example "t\\" onmouseover=\\"window.pwned=1")')
    (a,) = tree.all("a")
    assert set(a) == {"href", "title", "rel"}
    assert a["title"] == 't" onmouseover="window.pwned=1'


def test_a_fence_info_string_cannot_inject_an_attribute():
    tree = render('```python" onload="window.pwned=1\nx = 1\n```')
    (pre,) = tree.all("pre")
    assert set(pre) == {"data-lang", "tabindex"}
    assert pre["data-lang"] in {"", "python"}
    tree = render("```<script>window.pwned=1</script>\nx\n```")
    assert tree.all("pre") == [{"data-lang": "", "tabindex": "0"}]


@pytest.mark.parametrize(
    "nested",
    [
        "**<script>window.pwned=1</script>**",
        "[<img src=x onerror=window.pwned=1>](https://a.example)",
        "> <iframe src=https://evil.example>",
        "| a |\n|---|\n| <svg onload=window.pwned=1> |",
        "- <a href='javascript:window.pwned=1'>y</a>",
        "# <script>window.pwned=1</script>",
        "`<script>` then <script>window.pwned=1</script>",
        "```html\n<script>window.pwned=1</script>\n```",
    ],
)
def test_markdown_that_nests_html_shows_the_html_as_text(nested):
    tree = render(nested)
    assert not {t for t, _ in tree.elements} & {"script", "img", "iframe", "svg"}
    assert re.search(r"<(script|img|iframe|svg|a )", tree.text)


FRAGMENTS = st.sampled_from(
    [
        "<", ">", "\"", "'", "`", "```", "~~~", "\n", " ", "[", "]", "(", ")", "!", "*", "|",
        "&#x09;", "&lt;", "javascript:", "data:", "https://a.example", "<script>", "</script>",
        "onerror=", "<img src=x ", "<svg ", "alert(1)", "# ", "> ", "- ", "1. ", "    ",
        "python", "{\"a\": 1}", "\\",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_no_mix_of_markdown_and_html_fragments_makes_anything_run(text):
    render(text)


def test_empty_text_is_empty():
    assert message_html("") == ""
