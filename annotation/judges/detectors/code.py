"""Code in turns, as the detectors read it: fenced blocks, each block's language family,
its lines normalised (comments out, whitespace out, blank lines out), and changed lines.

- Blocks are fenced (``` or ~~~, three or more; a closing fence of the same character at
  least as long, with nothing after it; an unclosed fence runs to the end; the first word
  of the info string is the language), CommonMark's rule as annotation/codediff.py reads it
  with markdown-it, but by a line scan: markdown-it parses a reply in ~0.5 ms, too slow for
  a detector run over 100,000 turns (benchmarks/detectors_bench.py). The scan is lenient
  about indentation (a fence inside a list item indented by four spaces still counts, its
  indentation taken off the block's lines) and ignores blockquotes; on top-level fences it
  agrees with codediff.code_blocks (tests/judges/detectors/test_properties.py).
- A block's family is named by its fence ("py", "python3" -> python). An unnamed block, or
  one whose language is not known here, is "generic": its comments are the common ones
  (`//`, `/* */`, `<!-- -->`, and `#` followed by a space), and every language's import
  forms are tried on it. (code_guess.guess_language takes ~3 ms a block: too slow here.)
- Normalising keeps string literals as they are and drops the family's comments, then takes
  all whitespace out of each line and leaves blank lines out, so re-indenting, re-spacing,
  adding or removing comments and blank lines change nothing (a property test checks it).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

# a fence line: indentation, three or more backticks or tildes, the rest (info or nothing)
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$", re.M)
_WS = re.compile(r"[^\S\n]+")  # whitespace but line breaks
_ASCII_WS = str.maketrans("", "", " \t\r\f\v")  # the same, for ASCII text, faster


@dataclass(frozen=True)
class Block:
    lang: str  # the fence's first word as written ("" for none)
    text: str  # the block's content, its fence indentation taken off

    @cached_property
    def family(self) -> str:
        return family(self.lang)

    @cached_property
    def stripped(self) -> str:
        """The block's text with its comments taken out (strings kept)."""
        return strip_comments(self.text, self.family)

    @cached_property
    def norm(self) -> tuple[str, ...]:
        """The lines as compared: comments and all whitespace out, blank lines left out."""
        text = self.stripped
        text = text.translate(_ASCII_WS) if text.isascii() else _WS.sub("", text)
        return tuple(line for line in text.split("\n") if line)

    @cached_property
    def norm_set(self) -> frozenset[str]:
        return frozenset(self.norm)

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


@lru_cache(maxsize=16384)
def blocks(text: str) -> tuple[Block, ...]:
    """The fenced code blocks of a message, in order; blank ones left out."""
    if not text or ("```" not in text and "~~~" not in text):
        return ()
    found = []
    opened = None  # (indent, fence, lang, content start)
    for m in _FENCE.finditer(text):
        indent, fence, rest = m.group(1), m.group(2), m.group(3)
        if opened is None:
            if fence[0] == "`" and "`" in rest:
                continue  # inline code on a line of its own, not a fence
            info = rest.strip()
            opened = (indent, fence, info.split()[0] if info else "", m.end() + 1)
            continue
        if fence[0] == opened[1][0] and len(fence) >= len(opened[1]) and not rest.strip():
            found.append(_block(text[opened[3] : m.start()], opened[0], opened[2]))
            opened = None
    if opened is not None:  # unclosed: runs to the end
        found.append(_block(text[opened[3] :], opened[0], opened[2]))
    return tuple(b for b in found if b.text.strip())


def _block(content: str, indent: str, lang: str) -> Block:
    content = content.rstrip("\n")
    if indent:
        width = len(indent.expandtabs(4))
        content = "\n".join(_dedent(line, width) for line in content.split("\n"))
    return Block(lang, content)


def _dedent(line: str, width: int) -> str:
    n = len(line) - len(line.lstrip(" "))
    return line[min(n, width) :]


def prose(text: str) -> str:
    """The text with its fenced code blocks taken out (what a user wrote, not pasted)."""
    if not text or ("```" not in text and "~~~" not in text):
        return text
    out = []
    opened = None
    last = 0
    for m in _FENCE.finditer(text):
        fence, rest = m.group(2), m.group(3)
        if opened is None:
            if fence[0] == "`" and "`" in rest:
                continue
            out.append(text[last : m.start()])
            opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip():
            opened = None
            last = m.end()
    if opened is None:
        out.append(text[last:])
    return "\n".join(out)


# --- families ----------------------------------------------------------------------------------

_ALIASES = {
    "python": "py python python3 py3 python2 ipython sage pyw gdscript starlark bazel",
    "javascript": "js javascript jsx ts typescript tsx node nodejs mjs cjs es6 vue svelte",
    "java": "java kotlin kt kts scala sc groovy gradle",
    "c": "c h cpp c++ cc cxx hpp hh hxx objc objective-c objectivec arduino ino cuda cu",
    "csharp": "cs csharp c# dotnet",
    "go": "go golang",
    "rust": "rust rs",
    "php": "php php7 php8",
    "ruby": "ruby rb erb crystal",
    "r": "r rscript rmd splus",
    "swift": "swift",
    "perl": "perl pl pm",
    "matlab": "matlab octave m",
    "vb": "vb vbnet vb.net vba vbs vbscript visualbasic basic",
    "delphi": "delphi pascal pas objectpascal freepascal lazarus dpr",
    "sql": "sql mysql postgresql postgres psql plsql pgsql tsql t-sql sqlite mssql plpgsql hive",
    "fortran": "fortran f90 f95 f03 f08 f77 f for",
    "asm": "asm nasm masm x86asm assembly s gas armasm x86 arm avrasm",
    "cobol": "cobol cob cbl",
    "shell": "bash sh shell zsh console shell-session powershell ps1 ps fish ksh dockerfile "
    "docker makefile make cmake yaml yml toml ini conf nginx",
    "lua": "lua haskell hs elm ada",
    "markup": "html xml htm xhtml svg jsp",
    "css": "css scss less sass",
}
_FAMILY = {alias: fam for fam, names in _ALIASES.items() for alias in names.split()}


def family(lang: str) -> str:
    """The comment and import family of a fence's language ("generic" when unknown)."""
    return _FAMILY.get(lang.lower(), "generic")


_DQ = r'"(?:\\.|[^"\\\n])*"'
_SQ = r"'(?:\\.|[^'\\\n])*'"
_CHAR = r"'(?:\\.|[^'\\\n])'"
_C_COMMENTS = r"//[^\n]*|/\*[\s\S]*?\*/"
_HASH = r"#[^\n]*"
# (strings kept, comments dropped) per family; strings first, so a comment mark inside one
# is not a comment
_SYNTAX = {
    "python": (r"(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|" + _DQ + "|" + _SQ + ")", _HASH),
    "javascript": (_DQ + "|" + _SQ + r"|`(?:\\[\s\S]|[^`\\])*`", _C_COMMENTS),
    "java": ('"""[\\s\\S]*?"""|' + _DQ + "|" + _CHAR, _C_COMMENTS),
    "c": (_DQ + "|" + _CHAR, _C_COMMENTS),
    "csharp": (r'@"(?:""|[^"])*"|' + _DQ + "|" + _CHAR, _C_COMMENTS),
    "go": (_DQ + "|" + _CHAR + r"|`[^`]*`", _C_COMMENTS),
    "rust": (_DQ + "|" + _CHAR, _C_COMMENTS),
    "php": (_DQ + "|" + _SQ, _C_COMMENTS + "|" + _HASH),
    "ruby": (_DQ + "|" + _SQ, _HASH + r"|^=begin[\s\S]*?^=end"),
    "r": (_DQ + "|" + _SQ, _HASH),
    "swift": ('"""[\\s\\S]*?"""|' + _DQ, _C_COMMENTS),
    "perl": (_DQ + "|" + _SQ, _HASH),
    "matlab": (_DQ, r"%\{[\s\S]*?%\}|%[^\n]*"),
    "vb": (r'"(?:""|[^"\n])*"', r"'[^\n]*|(?im:^[ \t]*REM\b[^\n]*)"),
    "delphi": (r"'(?:''|[^'\n])*'", r"//[^\n]*|\{[\s\S]*?\}|\(\*[\s\S]*?\*\)"),
    "sql": (r"'(?:''|[^'])*'|" + _DQ, r"--[^\n]*|/\*[\s\S]*?\*/|(?m:^[ \t]*#[^\n]*)"),
    "fortran": (_DQ + "|" + _SQ, r"![^\n]*"),
    "asm": (_DQ + "|" + _CHAR, r";[^\n]*"),
    "cobol": (_DQ + "|" + _SQ, r"\*>[^\n]*|(?m:^[ \t]*\*[^\n]*)"),
    "shell": (_DQ + "|" + _SQ, r"(?m:(?:^|(?<=\s))#[^\n]*)"),
    "lua": (_DQ + "|" + _SQ, r"--[^\n]*|\{-[\s\S]*?-\}"),
    "markup": (_DQ, r"<!--[\s\S]*?-->"),
    "css": (_DQ + "|" + _SQ, r"/\*[\s\S]*?\*/"),
    "generic": (_DQ, _C_COMMENTS + r"|<!--[\s\S]*?-->|(?m:(?:^|(?<=\s))#(?=[ \t]|$)[^\n]*)"),
}
# the characters a string or comment of the family can start with: the runs of the others
# are read in one step (half the time of trying every alternative at every character)
_OPENERS = {
    "python": "\"'#",
    "javascript": "\"'`/",
    "java": "\"'/",
    "c": "\"'/",
    "csharp": "@\"'/",
    "go": "\"'`/",
    "rust": "\"'/",
    "php": "\"'/#",
    "ruby": "\"'#=",
    "r": "\"'#",
    "swift": '"/',
    "perl": "\"'#",
    "matlab": '"%',
    "vb": "\"' \tRr",
    "delphi": "'/{(",
    "sql": "'\"-/# \t",
    "fortran": "\"'!",
    "asm": "\"';",
    "cobol": "\"'* \t",
    "shell": "\"'#",
    "lua": "\"'-{",
    "markup": '"<',
    "css": "\"'/",
    "generic": '"/<#',
}
_STRIP = {
    fam: re.compile(
        f"({comments})|((?:{strings})|[^{re.escape(_OPENERS[fam])}]+|[{re.escape(_OPENERS[fam])}])",
        re.M,
    )
    for fam, (strings, comments) in _SYNTAX.items()
}


def strip_comments(text: str, fam: str) -> str:
    # the text as pieces, each a comment or not (a string, a run of characters that open
    # nothing, or one such character that opens nothing here): the pieces but comments
    return "".join([kept for _, kept in _STRIP[fam].findall(text)])


# --- comparing versions ------------------------------------------------------------------------


def opcodes(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes old -> new, the common first and last lines matched first (cheap,
    and most versions differ in a few lines between long equal stretches)."""
    n, m = len(old), len(new)
    head = 0
    while head < n and head < m and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    out = [("equal", 0, head, 0, head)] if head else []
    middle = difflib.SequenceMatcher(None, old[head : n - tail], new[head : m - tail], False)
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        out.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        out.append(("equal", n - tail, n, m - tail, m))
    return out


def changed_lines(old: Sequence[str], new: Sequence[str]) -> int:
    """How many lines a change touched (a replaced pair counts once, the longer side)."""
    if tuple(old) == tuple(new):
        return 0
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes(old, new) if tag != "equal")


def overlap(a: Block, b: Block) -> float:
    """How much of the smaller block's lines the other one holds (0 to 1): two versions of
    one program share most lines, a snippet shares most of its lines with the listing."""
    if not a.norm_set or not b.norm_set:
        return 0.0
    return len(a.norm_set & b.norm_set) / min(len(a.norm_set), len(b.norm_set))


def comparable(a: Block, b: Block) -> bool:
    """Blocks of one language (an unnamed block compares with any)."""
    return not a.lang or not b.lang or a.family == b.family


class _Trimmed(difflib.SequenceMatcher):
    """A SequenceMatcher whose opcodes match the common first and last lines first."""

    def get_opcodes(self):
        return opcodes(self.a, self.b)


def unified(old: Block, new: Block, old_turn: int, new_turn: int, limit: int = 60) -> str:
    """The unified diff of two blocks' lines (as `diff -u` writes it, two lines of
    context), at most `limit` lines of it."""
    a, b = old.lines, new.lines
    out = [f"--- turn {old_turn}", f"+++ turn {new_turn}"]
    for group in _Trimmed(None, a, b, False).get_grouped_opcodes(2):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_span(first[1], last[2])} +{_span(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in a[i1:i2])
                continue
            out.extend("-" + line for line in a[i1:i2])
            out.extend("+" + line for line in b[j1:j2])
        if len(out) > limit:
            return "\n".join([*out[:limit], "..."])
    return "\n".join(out) if len(out) > 2 else ""


def _span(start: int, end: int) -> str:
    n = end - start
    if n == 1:
        return str(start + 1)
    return f"{start + 1 if n else start},{n}"


def quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
