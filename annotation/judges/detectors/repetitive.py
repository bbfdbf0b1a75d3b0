"""`repetitive-response` (TAXONOMY.md `repetitive_response`): the user asked for a change and
the reply's code changed no meaningful line against the previous reply's code.

- A change request: the user's words (code fences left out) ask to change, add, fix or
  redo something ("fix", "add", "make it", "can you use ..."), or, unless they ask to
  explain or thank ("explain", "what does", "thanks"), report that it fails ("doesn't
  work", "error", "still", "instead"); a request to see the code again or whole ("show the
  full code", "send it again") is none.
- The previous reply's code: the latest earlier reply that has code.
- Changed lines: each block of the reply against the most similar block of the previous
  reply (of its language), lines compared normalised (code.py: comments, whitespace and
  blank lines do not count); a block with no counterpart counts all its lines. Blocks of the
  previous reply not shown again do not count (a reply may show one file of two).
- Score: 1 / (1 + changed lines): 1 when nothing changed, 0.5 for one line, ... so a
  threshold can allow a one-line change or not.

It applies to a turn whose user asked for a change, whose reply has code, and that has an
earlier reply with code. Evidence: the previous reply's turn and this one, the request, and
the changed lines (none) with the diff."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .base import Evidence, TurnView, register
from .code import Block, changed_lines, comparable, overlap, prose, quote, unified
from .code import blocks as code_blocks

DIFF_UP_TO = 5  # the evidence holds the diff of a block with this many changed lines at most

_VERBS = (
    r"fix|change|add|remove|delete|drop|make|update|modify|edit|rewrite|redo|refactor"
    r"|replace|rename|move|use|switch|convert|implement|handle|support|optimi[sz]e|improve"
    r"|correct|adjust|include|insert|append|extend|split|merge|simplify|clean|try|avoid"
    r"|sort|filter|return|print|throw|raise|catch|check|validate|limit|increase|decrease"
    r"|reduce|set|put|turn|allow|prevent|stop|keep|ensure|let|translate|port|write|create"
)
# an imperative: a change verb opening a sentence or clause, or after "please", "can you" ...
CHANGE = re.compile(
    r"(?:^|[.!?;:,\n]\s*|\b(?:please|pls|now|also|then|and|but|just|can you|could you"
    r"|would you|will you|can u|i want you to|i need you to|i'd like you to|you should"
    r"|you need to|you must|let's)\s+)(?:" + _VERBS + r")\b",
    re.I | re.M,
)
# a report that the code fails or is not what was asked, or a constraint on it
FAILURE = re.compile(
    r"\b(?:instead|doesn'?t work|does not work|didn'?t work|not working|isn'?t working"
    r"|still (?:fails?|failing|broken|wrong|not|doesn'?t|does not|getting|get|gives?|shows?"
    r"|same|crash\w*|error\w*|throws?|returns?)|same (?:error|problem|issue|result|output)"
    r"|error|exception|traceback|crash(?:es|ed)?|bug|broken|wrong|incorrect|fails?|failed"
    r"|failing|should(?:n'?t| not)?|needs? to|must(?:n'?t| not)?|don'?t|do not|never"
    r"|without|missing|forgot|not (?:what|right|correct|working))\b",
    re.I,
)
# asking to understand, or thanks: no change asked unless a change verb says so
ASK = re.compile(
    r"\b(?:explain|what does|what do|what is|what's|why (?:does|do|did|is)|how (?:does|do)"
    r"|thanks?|thank you|great|perfect|awesome|nice|cool|works(?: now| fine| great)?"
    r"|tell me about)\b",
    re.I,
)
# asking to see the code again or whole: repeating it is the answer
AGAIN = re.compile(
    r"\b(?:(?:full|complete|whole|entire) (?:code|version|listing|program|script|file)"
    r"|show (?:me )?(?:it|the code|that|this) again|repeat (?:it|the code|that)"
    r"|(?:send|give|show|paste|print) (?:me )?(?:it|the code|that) again)\b",
    re.I,
)


def is_change_request(user: str) -> bool:
    """Whether the user's words ask for a change: an imperative change verb, or (when they
    do not ask to explain, nor thank) a report of a failure; never a request to see the
    code again or whole."""
    words = prose(user)
    if AGAIN.search(words):
        return False
    if CHANGE.search(words):
        return True
    return not ASK.search(words) and bool(FAILURE.search(words))


class RepetitiveResponse:
    name = "repetitive-response"
    version = "1"
    smell = "repetitive_response"

    def applies(self, history: Sequence[TurnView], turn: TurnView) -> bool:
        return (
            any(block.norm for block in code_blocks(turn.reply))
            and _previous(history) is not None
            and is_change_request(turn.user)
        )

    def score(self, history: Sequence[TurnView], turn: TurnView) -> tuple[float, Evidence]:
        previous = _previous(history)
        if previous is None:
            return 0.0, Evidence((turn.index,), (), "no earlier reply has code")
        earlier = code_blocks(previous.reply)
        changed, diffs, shown = 0, [], []
        for block in code_blocks(turn.reply):
            match = _closest(block, earlier)
            if match is None:
                changed += len(block.norm)
                shown.extend(quote(line) for line in block.lines[:2])
                continue
            n = changed_lines(match.norm, block.norm)
            changed += n
            if 0 < n <= DIFF_UP_TO:
                diffs.append(unified(match, block, previous.index, turn.index))
        request = quote(prose(turn.user), 200)
        if changed == 0:
            detail = f"the code is turn {previous.index}'s again: no meaningful line changed"
        else:
            detail = f"{changed} meaningful lines changed\n" + "\n".join(diffs)
        evidence = Evidence((previous.index, turn.index), (request, *shown[:3]), detail)
        return 1.0 / (1 + changed), evidence


def _previous(history: Sequence[TurnView]) -> TurnView | None:
    for earlier in reversed(history):
        if code_blocks(earlier.reply):
            return earlier
    return None


def _closest(block: Block, earlier: Sequence[Block]) -> Block | None:
    best, best_share = None, -1.0
    for candidate in earlier:
        if not comparable(block, candidate):
            continue
        if candidate.norm == block.norm:
            return candidate
        share = overlap(block, candidate)
        if share > best_share:
            best, best_share = candidate, share
    return best if best_share > 0 else None


DETECTOR = register(RepetitiveResponse())
