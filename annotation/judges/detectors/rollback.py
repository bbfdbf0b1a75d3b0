"""`code-rollback` (TAXONOMY.md `code_rollback`): the reply reverts to an earlier version of
the code, reintroducing what had been fixed.

For each code block of the reply, its earlier versions are the blocks of the messages
within RADIUS turns before it (users' pasted code included, the current user's message
too) that are of its language and share at least half of the smaller one's lines (three
at least): in each message the one sharing most. Lines are compared normalised (code.py:
comments and whitespace out).

- Identity revert (score 1): the block equals an earlier version while a later version
  changed it inside (lines replaced, added or removed between unchanged neighbours; not a
  snippet grown into the whole listing), and this reply undoes that.
- Partial revert (score = the share of the fix's changed lines reverted): a change between
  two consecutive versions (a fix: lines added, replaced or removed between two unchanged
  neighbours), still in place in every later version, is undone here: the reply has the
  neighbours around the old lines again. Among the fixes, the most reverted one counts.
- Not a rollback (score 0) when the user asked to go back ("revert", "undo", "go back to
  the previous version", "as before", ...).

It applies to a turn whose reply has a block with two versions or more before it.
Evidence: the earlier version's turn, the turn whose change is undone, this turn; the lines
that disappear; the unified diff of that change's version against the reply's block."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .base import Evidence, TurnView, register
from .code import Block, comparable, opcodes, prose, quote, strip_comments, unified
from .code import blocks as code_blocks

RADIUS = 5  # turns back in which an earlier version counts
MIN_OVERLAP = 0.5
MIN_SHARED = 3  # lines two versions share at least
CONTEXT = 2  # unchanged lines each side that anchor a change

# the user asks to go back: a rollback on request is no smell
GO_BACK = re.compile(
    r"\b(revert|undo|roll ?back|go(ing)? back|switch back|change (it )?back|put (it )?back"
    r"|restore|as (it was )?before|like before|(previous|original|old|older|earlier|first|last"
    r"|prior) (version|code|one|implementation|solution)|you had (before|earlier)"
    r"|the way it was)\b",
    re.I,
)


@dataclass(frozen=True)
class Version:
    turn: int
    block: Block


class CodeRollback:
    name = "code-rollback"
    version = "1"
    smell = "code_rollback"

    def __init__(self, radius: int = RADIUS) -> None:
        self.radius = radius

    def applies(self, history: Sequence[TurnView], turn: TurnView) -> bool:
        return any(len(chain) >= 2 for _, chain in _chains(tuple(history), turn, self.radius))

    def score(self, history: Sequence[TurnView], turn: TurnView) -> tuple[float, Evidence]:
        asked = GO_BACK.search(prose(turn.user))
        if asked:
            said = quote(turn.user[max(0, asked.start() - 40) : asked.end() + 40])
            detail = "the user asked to go back: a rollback on request is no smell"
            return 0.0, Evidence((turn.index,), (said,), detail)
        best = (0.0, Evidence((turn.index,), (), "no earlier version is undone"))
        for block, chain in _chains(tuple(history), turn, self.radius):
            if len(chain) < 2:
                continue
            found = _identity(block, chain, turn.index) or _partial(block, chain, turn.index)
            if found and found[0] > best[0]:
                best = found
        return best


def _chains(
    history: tuple[TurnView, ...], turn: TurnView, radius: int
) -> list[tuple[Block, list[Version]]]:
    return _chains_cached(history[-radius:] if radius else (), turn)


@lru_cache(maxsize=64)
def _chains_cached(
    recent: tuple[TurnView, ...], turn: TurnView
) -> list[tuple[Block, list[Version]]]:
    messages = [(t.index, text) for t in recent for text in (t.user, t.reply)]
    messages.append((turn.index, turn.user))
    out = []
    for block in code_blocks(turn.reply):
        if len(block.norm_set) < MIN_SHARED:
            continue
        chain = []
        for index, text in messages:
            match, best = None, MIN_OVERLAP
            for candidate in code_blocks(text):
                if not comparable(block, candidate):
                    continue
                shared = len(block.norm_set & candidate.norm_set)
                if shared < MIN_SHARED:
                    continue
                share = shared / min(len(block.norm_set), len(candidate.norm_set))
                if share >= best:  # the share of the smaller one's lines (code.overlap)
                    match, best = candidate, share
            if match is not None:
                chain.append(Version(index, match))
        out.append((block, chain))
    return out


def _identity(block: Block, chain: list[Version], now: int):
    if chain[-1].block.norm == block.norm:
        return None  # the same as the latest version: a repetition, not a rollback
    for i in range(len(chain) - 2, -1, -1):
        if chain[i].block.norm != block.norm:
            continue
        for later in chain[i + 1 :]:
            # a change inside the code (not lines added at an edge: a snippet grown into
            # the whole listing) that this block does not have
            changes = _hunks(chain[i].block.norm, later.block.norm)
            gone = [line for _, new, _ in changes for line in new if line not in block.norm_set]
            if changes:
                earlier = chain[i]
                turns = tuple(sorted({earlier.turn, later.turn, now}))
                quotes = tuple(_raw_lines(later.block, gone)) or tuple(
                    _raw_lines(chain[i].block, [line for old, _, _ in changes for line in old])
                )
                diff = unified(later.block, block, later.turn, now)
                detail = (
                    f"the code equals turn {earlier.turn}'s version; the change of turn "
                    f"{later.turn} is undone:\n{diff}"
                )
                return 1.0, Evidence(turns, quotes, detail)
    return None


def _partial(block: Block, chain: list[Version], now: int):
    best = None
    for m in range(1, len(chain)):
        before, after = chain[m - 1].block, chain[m].block
        added = after.norm_set - before.norm_set
        if not (added - block.norm_set) and not (
            (before.norm_set - after.norm_set) & block.norm_set
        ):
            continue  # nothing the fix brought is gone, nothing it took out is back
        reverted, kept, undone = 0, 0, []
        for old, new, anchors in _hunks(before.norm, after.norm):
            old_form, new_form = _form(anchors, old), _form(anchors, new)
            if any(_has(v.block, old_form) for v in chain[m + 1 :]):
                continue  # undone before this turn already
            size = max(len(old), len(new))
            if _has(block, old_form):
                reverted += size
                undone.extend(new or old)
            elif _has(block, new_form):
                kept += size
        if reverted:
            share = reverted / (reverted + kept)
            if best is None or share > best[0]:
                fix = chain[m]
                turns = tuple(sorted({chain[m - 1].turn, fix.turn, now}))
                diff = unified(fix.block, block, fix.turn, now)
                detail = (
                    f"{reverted} of {reverted + kept} changed lines of turn {fix.turn}'s fix "
                    f"are undone:\n{diff}"
                )
                lines = _raw_lines(fix.block, undone) or _raw_lines(chain[m - 1].block, undone)
                best = (share, Evidence(turns, tuple(lines), detail))
    return best


@lru_cache(maxsize=4096)
def _hunks(old: tuple[str, ...], new: tuple[str, ...]):
    """The changes old -> new that have unchanged neighbours on both sides in `new`:
    (old lines, new lines, (left neighbours, right neighbours))."""
    out = []
    for tag, i1, i2, j1, j2 in opcodes(old, new):
        if tag == "equal":
            continue
        left, right = new[max(0, j1 - CONTEXT) : j1], new[j2 : j2 + CONTEXT]
        if left and right:  # a change at an edge may be a snippet's cut, not a fix
            out.append((old[i1:i2], new[j1:j2], (left, right)))
    return out


def _form(anchors, middle) -> str:
    left, right = anchors
    return "\n" + "\n".join((*left, *middle, *right)) + "\n"


def _has(block: Block, form: str) -> bool:
    return form in _joined(block.norm)


@lru_cache(maxsize=4096)
def _joined(norm: tuple[str, ...]) -> str:
    return "\n" + "\n".join(norm) + "\n"


def _raw_lines(block: Block, norm_lines, limit: int = 5) -> list[str]:
    """The block's own lines (as written) for some of its normalised lines."""
    wanted = set(norm_lines)
    out = []
    for line in strip_comments(block.text, block.family).split("\n"):
        if "".join(line.split()) in wanted:
            out.append(quote(line.strip()))
            if len(out) == limit:
                break
    return out


DETECTOR = register(CodeRollback())
