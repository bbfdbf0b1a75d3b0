"""Properties of the detectors on generated input: comment and whitespace changes are no
changes; signature-mismatch agrees with Python itself; scores stay in [0, 1] and `detect`
never raises, whatever the Markdown; the fence scan agrees with codediff's markdown-it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import codediff
from annotation.judges.detectors import REGISTRY, Evidence, TurnView, detect, get
from annotation.judges.detectors.code import Block, blocks, changed_lines

from .conftest import fence

# (fence language, line comment opener, block comment (open, close)) per family
COMMENTS = [
    ("python", "#", None),
    ("javascript", "//", ("/*", "*/")),
    ("c", "//", ("/*", "*/")),
    ("java", "//", ("/*", "*/")),
    ("go", "//", ("/*", "*/")),
    ("rust", "//", ("/*", "*/")),
    ("php", "#", ("/*", "*/")),
    ("ruby", "#", None),
    ("sql", "--", ("/*", "*/")),
    ("vb", "'", None),
    ("matlab", "%", ("%{\n", "\n%}")),
    ("delphi", "//", ("{", "}")),
    ("fortran", "!", None),
    ("asm", ";", None),
    ("lua", "--", None),
    ("bash", "#", None),
    ("html", None, ("<!--", "-->")),
    ("css", None, ("/*", "*/")),
    ("", "//", ("/*", "*/")),  # an unnamed block: the common comments
]

# tokens that cannot form a comment mark, a string's end or a fence, however spaced
IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
TOKEN = st.one_of(
    IDENT,
    st.from_regex(r"[0-9]{1,4}", fullmatch=True),
    st.from_regex(r'"[a-z]{1,6}"', fullmatch=True),
    st.sampled_from(list("=+(),.:[]<>")),
)
LINES = st.lists(st.lists(TOKEN, min_size=1, max_size=8), min_size=1, max_size=12)
COMMENT_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), max_size=30
)  # any text but a line break


def noisy(lines, line_comment, block_comment, draw_space, draw_text):
    out = []
    for tokens in lines:
        if draw_space(st.booleans()):
            out.append(draw_space(st.sampled_from(["", "   ", "\t"])))  # a blank line
        if line_comment and draw_space(st.booleans()):
            out.append(" " * draw_space(st.integers(0, 4)) + line_comment + " " + draw_text())
        if block_comment and draw_space(st.booleans()):
            opener, closer = block_comment
            text = draw_text().replace(closer.strip(), "").replace("}", "")
            out.append(opener + text + closer)
        sep = draw_space(st.sampled_from([" ", "  ", "\t", " \t "]))
        line = " " * draw_space(st.integers(0, 8)) + sep.join(tokens)
        line += " " * draw_space(st.integers(0, 3))
        if line_comment and draw_space(st.booleans()):
            line += " " + line_comment + " " + draw_text()
        out.append(line)
    return "\n".join(out)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(COMMENTS), LINES, st.data())
def test_comment_and_whitespace_changes_never_count_as_changes(comments, lines, data):
    lang, line_comment, block_comment = comments
    plain = "\n".join(" ".join(tokens) for tokens in lines)
    changed = noisy(lines, line_comment, block_comment, data.draw, lambda: data.draw(COMMENT_TEXT))
    a, b = Block(lang, plain), Block(lang, changed)
    assert a.norm == b.norm
    assert changed_lines(a.norm, b.norm) == 0
    turns = [
        TurnView(0, "Write it.", fence(plain, lang)),
        TurnView(1, "Fix the bug.", fence(changed, lang)),
    ]
    assert [s for _, s, _ in detect(get("repetitive-response"), turns)] == [1.0]


# --- signature-mismatch against Python ---------------------------------------------------------


@st.composite
def signatures(draw):
    """A `def` parameter list: positional-only, regular, *args, keyword-only, **kwargs,
    defaults trailing the positional ones, names unique."""
    names = iter(f"p{i}" for i in range(20))
    posonly = draw(st.integers(0, 3))
    regular = draw(st.integers(0, 3))
    defaults = draw(st.integers(0, posonly + regular))
    positional = [next(names) for _ in range(posonly + regular)]
    rendered = [
        name + ("=0" if i >= posonly + regular - defaults else "")
        for i, name in enumerate(positional)
    ]
    if posonly:
        rendered.insert(posonly, "/")
    star = draw(st.booleans())
    kwonly = [(next(names), draw(st.booleans())) for _ in range(draw(st.integers(0, 3)))]
    if star:
        rendered.append("*args")
    elif kwonly:
        rendered.append("*")
    rendered += [name + ("=0" if default else "") for name, default in kwonly]
    if draw(st.booleans()):
        rendered.append("**kwargs")
    return ", ".join(rendered)


@st.composite
def calls(draw):
    n = draw(st.integers(0, 6))
    keywords = draw(
        st.lists(
            st.sampled_from([f"p{i}" for i in range(8)] + ["args", "kwargs", "zz"]),
            unique=True,
            max_size=4,
        )
    )
    return ", ".join([str(i) for i in range(n)] + [f"{k}={i}" for i, k in enumerate(keywords)])


@settings(max_examples=400, deadline=None)
@given(signatures(), calls())
def test_signature_mismatch_agrees_with_calling_the_function(params, args):
    source = f"def f({params}):\n    return None"
    namespace: dict = {}
    exec(source, namespace)  # the real function, from the same def
    try:
        eval(f"f({args})", namespace)
        fails = False
    except TypeError:
        fails = True
    turns = [
        TurnView(0, "Write f.", fence(source)),
        TurnView(1, "Call it.", fence(f"result = f({args})")),
    ]
    found = detect(get("signature-mismatch"), turns)
    assert [(i, s) for i, s, _ in found] == [(1, 1.0 if fails else 0.0)], (source, args)


# --- robustness --------------------------------------------------------------------------------

LANGS = st.sampled_from(["python", "py", "js", "c", "cpp", "sql", "go", "rust", "", "text", "x"])
CODE_LINES = st.sampled_from(
    [
        "import numpy as np",
        "from os import path",
        "#include <regex>",
        "def f(a, b=1, *c, d, **e):",
        "    return f(1, 2, d=3)",
        "class A:",
        "    def m(self, x): return x",
        "A().m(1, 2)",
        "f(",
        'const x = require("lodash");',
        "use std::io;",
        "}",
        "/* open comment",
        '"""',
        "    ",
    ]
)
BODY = st.one_of(st.text(max_size=80), st.lists(CODE_LINES, max_size=10).map("\n".join))
FENCE = st.builds(
    lambda mark, lang, body, close: f"{mark}{lang}\n{body}\n" + (mark if close else ""),
    st.sampled_from(["```", "~~~", "````", "  ```", "    ```"]),
    LANGS,
    BODY,
    st.booleans(),
)
USER = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "Don't use numpy, pandas or `lodash`.",
            "You can use numpy now.",
            "Revert that.",
            "Fix the bug.",
            "No `re` module!",
            "It still fails.",
        ]
    ),
)
MESSAGE = st.lists(st.one_of(st.text(max_size=40), FENCE), max_size=4).map("\n\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.one_of(USER, MESSAGE), MESSAGE), min_size=1, max_size=6))
def test_detect_never_raises_and_scores_stay_in_0_1(pairs):
    turns = [TurnView(i, user, reply) for i, (user, reply) in enumerate(pairs)]
    for detector in REGISTRY.values():
        for index, score, evidence in detect(detector, turns):
            assert 0.0 <= score <= 1.0
            assert 0 <= index < len(turns)
            assert isinstance(evidence, Evidence)
            assert all(0 <= t < len(turns) for t in evidence.turns)
            assert all(isinstance(q, str) for q in evidence.quotes)


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(st.one_of(USER, MESSAGE), MESSAGE), min_size=1, max_size=4))
def test_each_detector_scores_in_0_1_directly(pairs):
    turns = [TurnView(i, user, reply) for i, (user, reply) in enumerate(pairs)]
    for detector in REGISTRY.values():
        for position, turn in enumerate(turns):
            score, evidence = detector.score(turns[:position], turn)
            assert 0.0 <= score <= 1.0, detector.name


# --- the fence scan against markdown-it --------------------------------------------------------

PROSE = st.from_regex(r"[A-Za-z][A-Za-z ,.]{0,40}", fullmatch=True)
BODY_LINE = st.text(
    st.characters(
        whitelist_categories=("L", "N", "P", "Zs", "S"), blacklist_characters="`~\u2028\u2029"
    ),
    max_size=30,
)


@st.composite
def top_level_markdown(draw):
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        parts.append(draw(PROSE))
        mark = draw(st.sampled_from(["```", "~~~", "````"]))
        lang = draw(st.sampled_from(["python", "js", "", "c"]))
        body = "\n".join(draw(st.lists(BODY_LINE, max_size=5)))
        parts.append(f"{mark}{lang}\n{body}\n{mark}")
    if draw(st.booleans()):  # an unclosed fence runs to the end
        parts.append("```\n" + "\n".join(draw(st.lists(BODY_LINE, max_size=3))))
    return "\n\n".join(parts)


@settings(max_examples=150, deadline=None)
@given(top_level_markdown())
def test_the_fence_scan_agrees_with_markdown_it_on_top_level_fences(text):
    ours = [(b.lang, tuple(b.text.split("\n"))) for b in blocks(text)]
    theirs = [(b.lang, b.lines) for b in codediff.code_blocks(text)]
    assert ours == theirs


# --- signature-mismatch's skeleton against the whole parse -----------------------------------

PARAMS = st.sampled_from(["", "a", "a, b=1", "self, x", "self, *args, **kw", "a, /, b, *, c"])
PIECES = st.lists(
    st.one_of(
        st.builds(
            lambda p: f"def f_{len(p)}({p}):\n    x = ({p!r},\n         1)\n    return x", PARAMS
        ),
        st.builds(lambda p: f"@staticmethod\ndef s({p}):\n    pass", PARAMS),
        st.builds(lambda p: f"@app.route('/')\ndef routed({p}): return 1", PARAMS),
        st.builds(
            lambda p, q: (
                f"class K{len(p)}(Base):\n    '''doc'''\n\n    def __init__(self, {p}):\n"
                f"        self.v = 1\n\n    @classmethod\n    def make(cls,\n             {q or 'z'}):\n"
                f"        def inner(a, b):\n            return a\n        return cls()"
            ),
            PARAMS.filter(lambda p: "self" not in p and "/" not in p),
            PARAMS.filter(lambda p: "self" not in p),
        ),
        st.just("class Plain:\n    x = 1  # def not_a_method(self):"),
        st.just("if True:\n    def hidden(a):\n        pass"),
        st.just("import os\nvalue = os.path.join('a', 'b')"),
    ),
    max_size=6,
).map("\n\n".join)


@settings(max_examples=150, deadline=None)
@given(PIECES)
def test_definitions_read_from_the_skeleton_equal_those_of_the_whole_parse(source):
    import ast

    from annotation.judges.detectors import signature

    block = Block("python", source)
    whole = signature.read_definitions(ast.parse(source), block, 0, list(range(len(block.lines))))
    assert signature.definitions(block, 0) == whole


@given(
    st.lists(st.sampled_from("abcde"), max_size=15), st.lists(st.sampled_from("abcde"), max_size=15)
)
def test_opcodes_turn_the_old_lines_into_the_new_ones(old, new):
    from annotation.judges.detectors.code import opcodes

    rebuilt = []
    for tag, i1, i2, j1, j2 in opcodes(old, new):
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
            rebuilt += old[i1:i2]
        else:
            rebuilt += new[j1:j2]
    assert rebuilt == new
    assert changed_lines(old, new) == 0 if old == new else changed_lines(old, new) > 0


LINE = st.sampled_from(["x = 1", "y = 2", "z", "  w", "}", "q()"])


@given(st.lists(LINE, max_size=14), st.lists(LINE, max_size=14))
def test_the_evidence_diff_is_difflibs_unified_diff_where_both_align_the_same(old, new):
    import difflib

    from annotation.judges.detectors.code import opcodes, unified

    a, b = Block("", "\n".join(old)), Block("", "\n".join(new))
    matcher = difflib.SequenceMatcher(None, a.lines, b.lines, False)
    if matcher.get_opcodes() != opcodes(a.lines, b.lines):
        return  # two valid diffs, aligned differently
    theirs = difflib.unified_diff(a.lines, b.lines, "turn 1", "turn 2", lineterm="", n=2)
    assert unified(a, b, 1, 2, limit=10**6) == "\n".join(theirs)
