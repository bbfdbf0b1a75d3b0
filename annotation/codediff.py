"""Code across turns: the code blocks of a reply, and for each the closest code block of the
earlier replies of its conversation, with their diff side by side and unified.

Pure functions over text (no models, no requests): the card's and the discussion page's
diff partial (views/diff.py) call `diff_reply`; the card itself only asks `has_code`.

- A code block is a fenced block (``` or ~~~, CommonMark's rule: a longer fence holds a
  shorter one, an unclosed fence runs to the end) read with markdown-it-py, whose first word
  of the info string is its language. Indented code blocks are ignored.
- The closest earlier block of a block: among the blocks of the earlier replies (never the
  user's messages, never the same reply), those of the same language when both name one (an
  unnamed block matches any, and any block matches an unnamed one; "py" and "python" are one
  language, by Pygments' aliases), the most similar; a tie goes to the most recent block.
- Similarity is difflib's ratio over the blocks' lines with their whitespace taken out and
  blank lines left out, so re-indenting a block costs nothing. (Over tokens it would weigh a
  renamed argument less, but costs a thousand times more on a long block: difflib is
  quadratic in the repeats of `(` and `=`.) real_quick_ratio and quick_ratio, upper bounds
  of ratio, skip the candidates that cannot beat the best so far, so a long conversation
  stays fast (benchmarks/codediff_bench.py).
- The diff is over lines, with three lines of context; longer unchanged stretches fold into
  one "skip" row. A pair of changed lines also marks the characters that changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property, lru_cache

from markdown_it import MarkdownIt
from pygments.lexers import find_lexer_class_by_name
from pygments.util import ClassNotFound

CONTEXT = 3  # unchanged lines shown around a change
# a fence opens on a line of its own, indented by three spaces at most (CommonMark)
_FENCE_LINE = re.compile(r"^ {0,3}(```|~~~)", re.M)
# past this many characters a changed pair of lines is marked whole, not character by character
_MAX_INLINE = 400

_parser = MarkdownIt("commonmark")

# (text, changed) pieces of one line: `changed` marks the characters that differ within a
# changed line that mostly stays the same (a renamed argument), nothing else
Segments = tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class CodeBlock:
    turn: int  # the index of the turn whose reply holds it
    position: int  # 1-based, among the reply's blocks
    of: int  # how many blocks the reply holds
    lang: str  # as the fence names it ("" for none)
    lines: tuple[str, ...]

    @property
    def language(self) -> str:
        """The language's name for people ("Python" for py), or "" for an unnamed block."""
        return language_name(self.lang)

    @cached_property  # a block is compared with every block of the reply it is diffed for
    def shape(self) -> tuple[str, ...]:
        """What similarity compares: the lines without their whitespace, blank ones left
        out (re-indenting a block or re-spacing a line changes nothing)."""
        squeezed = ("".join(line.split()) for line in self.lines)
        return tuple(line for line in squeezed if line)


@dataclass(frozen=True)
class Row:
    """One row of the side-by-side view: equal, replace, delete, insert, or skip (a folded
    stretch of `skipped` unchanged lines). Line numbers count from 1 in each block."""

    kind: str
    old_no: int | None = None
    old: Segments = ()
    new_no: int | None = None
    new: Segments = ()
    skipped: int = 0


@dataclass(frozen=True)
class UnifiedLine:
    """One line of the unified view: " " unchanged, "-" removed, "+" added, "@@" a hunk's
    header (its text says where the hunk is, as `diff -u` does)."""

    kind: str
    old_no: int | None
    new_no: int | None
    segments: Segments

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.segments)


@dataclass
class BlockDiff:
    """One code block of the reply against its closest earlier block (None: none found)."""

    block: CodeBlock
    earlier: CodeBlock | None
    similarity: float = 0.0
    rows: list[Row] = field(default_factory=list)
    unified: list[UnifiedLine] = field(default_factory=list)
    # the other earlier turns with a block it may be compared with, to pick by hand (the
    # closest of a rollback is the old code; the fix it undid is in a turn listed here)
    others: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(r.kind not in ("equal", "skip") for r in self.rows)

    @property
    def message(self) -> str:
        """What to say besides the diff: no earlier code, or the same code again."""
        if self.earlier is None:
            lang = self.block.language
            return f"No earlier code in {lang}." if lang else "No earlier code."
        if not self.changed:
            return f"Same code as turn {self.earlier.turn}: no line changed."
        return ""


# --- blocks ------------------------------------------------------------------------------


def has_code(text: str) -> bool:
    """Whether the text may hold a fenced code block: one regular-expression search, cheap
    enough for rendering a card (it does not parse; `code_blocks` decides)."""
    return bool(text) and _FENCE_LINE.search(text) is not None


def code_blocks(text: str, turn: int = 0) -> list[CodeBlock]:
    """The fenced code blocks of `text` (a reply of turn `turn`), in order; empty ones
    dropped."""
    if not has_code(text):
        return []
    found = []
    for token in _parser.parse(text):
        if token.type != "fence" or not token.content.strip():
            continue
        lang = token.info.split()[0] if token.info.strip() else ""
        found.append((lang, tuple(token.content.rstrip("\n").split("\n"))))
    n = len(found)
    return [CodeBlock(turn, i, n, lang, lines) for i, (lang, lines) in enumerate(found, 1)]


@lru_cache(maxsize=512)
def language_key(lang: str) -> str:
    """One key per language, whatever alias the fence uses ("" for an unnamed block)."""
    if not lang:
        return ""
    try:
        return find_lexer_class_by_name(lang.lower()).name
    except ClassNotFound:
        return lang.lower()


def language_name(lang: str) -> str:
    key = language_key(lang)
    return key if key != lang.lower() else lang


def _same_language(a: CodeBlock, b: CodeBlock) -> bool:
    return not a.lang or not b.lang or language_key(a.lang) == language_key(b.lang)


# --- the closest earlier block -------------------------------------------------------------------


def closest(block: CodeBlock, earlier: Sequence[CodeBlock]) -> tuple[CodeBlock | None, float]:
    """The most similar block of `earlier` (in conversation order) that may be compared with
    `block`, and its similarity (0 to 1); a tie goes to the later block."""
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(block.shape)  # the matcher caches what it learns of the second one
    best, best_ratio = None, -1.0
    for candidate in reversed(earlier):
        if not _same_language(block, candidate):
            continue
        matcher.set_seq1(candidate.shape)
        # upper bounds first: a candidate that cannot beat the best (ties go to the later
        # one, seen first) is not compared in full
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best, best_ratio = candidate, ratio
    return best, max(best_ratio, 0.0)


def diff_reply(
    text: str, turn: int, earlier_replies: Iterable[tuple[int, str]], against: int | None = None
) -> list[BlockDiff]:
    """Each code block of `text` (the reply of turn `turn`) against its closest block among
    `earlier_replies`, (turn index, reply text) pairs of the earlier turns; with `against`,
    its closest block of that turn only."""
    blocks = code_blocks(text, turn)
    if not blocks:
        return []
    candidates: list[CodeBlock] = []
    for index, reply in sorted(earlier_replies):
        if index < turn:
            candidates.extend(code_blocks(reply, index))
    out = []
    for block in blocks:
        comparable = [c for c in candidates if _same_language(block, c)]
        pool = comparable if against is None else [c for c in comparable if c.turn == against]
        match, ratio = closest(block, pool)
        d = BlockDiff(block, match, round(ratio, 3))
        if match is not None:
            d.rows, d.unified = line_diff(match.lines, block.lines)
        d.others = sorted({c.turn for c in comparable} - {match.turn if match else None})
        out.append(d)
    return out


# --- the diff ----------------------------------------------------------------------------------


def line_diff(old: Sequence[str], new: Sequence[str]) -> tuple[list[Row], list[UnifiedLine]]:
    """The side-by-side rows and the unified lines of old -> new; no rows when equal."""
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    opcodes = matcher.get_opcodes()
    if all(tag == "equal" for tag, *_ in opcodes):
        return [], []
    rows: list[Row] = []
    unified: list[UnifiedLine] = []
    shown = 0  # the old lines already shown or folded
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        if first[1] > shown:
            rows.append(Row("skip", skipped=first[1] - shown))
        unified.append(_hunk_header(first, last))
        for tag, i1, i2, j1, j2 in group:
            _add_opcode(rows, unified, tag, old, new, i1, i2, j1, j2)
        shown = last[2]
    if shown < len(old):
        rows.append(Row("skip", skipped=len(old) - shown))
    return rows, unified


def _hunk_header(first, last) -> UnifiedLine:
    def span(start: int, end: int) -> str:
        n = end - start
        return f"{start + 1 if n else start},{n}"

    text = f"@@ -{span(first[1], last[2])} +{span(first[3], last[4])} @@"
    return UnifiedLine("@@", None, None, ((text, False),))


def _add_opcode(rows, unified, tag, old, new, i1, i2, j1, j2) -> None:
    if tag == "equal":
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            seg = ((old[i], False),)
            rows.append(Row("equal", i + 1, seg, j + 1, seg))
            unified.append(UnifiedLine(" ", i + 1, j + 1, seg))
        return
    # a removed or added line is changed as a whole: no piece of it is marked
    olds: list[tuple[int, Segments]] = [(i + 1, ((old[i], False),)) for i in range(i1, i2)]
    news: list[tuple[int, Segments]] = [(j + 1, ((new[j], False),)) for j in range(j1, j2)]
    for k in range(min(len(olds), len(news))):  # a changed pair: mark the characters
        a, b = _changed_chars(olds[k][1][0][0], news[k][1][0][0])
        olds[k], news[k] = (olds[k][0], a), (news[k][0], b)
    for k in range(max(len(olds), len(news))):
        o = olds[k] if k < len(olds) else (None, ())
        n = news[k] if k < len(news) else (None, ())
        kind = "replace" if o[0] and n[0] else ("delete" if o[0] else "insert")
        rows.append(Row(kind, o[0], o[1], n[0], n[1]))
    unified.extend(UnifiedLine("-", no, None, seg) for no, seg in olds)
    unified.extend(UnifiedLine("+", None, no, seg) for no, seg in news)


def _changed_chars(a: str, b: str) -> tuple[Segments, Segments]:
    """Two versions of a line cut into unchanged and changed pieces; none marked when they
    have little in common (scattered marks would say less than the whole line's change)."""
    whole = ((a, False),), ((b, False),)
    if len(a) > _MAX_INLINE or len(b) > _MAX_INLINE:
        return whole
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < 0.5:
        return whole
    old: list[tuple[str, bool]] = []
    new: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            old.append((a[i1:i2], tag != "equal"))
        if j2 > j1:
            new.append((b[j1:j2], tag != "equal"))
    return tuple(old), tuple(new)
