"""`must-not-violation` (TAXONOMY.md `must_not_violation`): an explicit ban in a user message
("don't use X", "do not use X", "never use X", "without X", "no X", "avoid X", "X is not
allowed") followed by X imported or called in the code of a later reply.

- Bans are read from the users' own words (code fences left out), in every message up to
  and including the turn's own (the reply comes after it). A ban names one thing or a list
  ("numpy, pandas or scipy"); an item that is not one name ("list comprehensions", "for
  loops", "external libraries") bans a construct, not a name, and is not read. "no X" is
  read only where X is plainly code: quoted, in backticks, followed by "library", "module",
  "package" ..., or spelt as code (`os.system`, `std::regex`, `jQuery`, `eval()`).
- A ban is lifted by a later "you can use X", "feel free to use X", "it's fine to use X",
  "X is allowed", "go ahead and use X", or a sentence opening with "use X".
- A violation: X imported in the reply's code by its language's import forms (imports.py,
  the TIOBE-20 languages) or called (`X(`, `X.f`) in it, comments left out.
- Score: the ban's strength (1 for "don't", "never", "must not", "not allowed"; 0.8 for
  "avoid" and "without"; 0.7 for "no X") times the use's (1 for an import, 0.9 for a call).

It applies to a turn with a ban in force and code in its reply. Evidence: the ban's turn and
this one, the ban's sentence and the offending line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .base import Evidence, TurnView, register
from .code import Block, prose, quote
from .code import blocks as code_blocks
from .imports import imports, matches

_USE = r"(?:use|using|import|importing|call|calling|include|including|rely on|depend on|touch)"
_NOT = (
    r"(?:don'?t|do not|dont|never|must not|mustn'?t|should not|shouldn'?t|can'?t|cannot"
    r"|can not|may not|(?:are|is|am)(?: not|n'?t) (?:allowed|permitted) to|not allowed to"
    r"|refrain from|stop)"
)
_BANS = [
    (1.0, rf"\b{_NOT}\s+(?:ever\s+)?{_USE}\s+"),
    (1.0, rf"\bi\s+(?:don'?t|do not)\s+want\s+(?:you\s+)?(?:to\s+)?{_USE}\s+"),
    (0.8, rf"\bavoid(?:ing)?\s+(?:{_USE}\s+)?"),
    (0.8, rf"\bwithout\s+(?:{_USE}\s+)?"),
    (0.7, r"\bno\s+"),
]
_BAN = re.compile("|".join(f"(?P<b{i}>{p})" for i, (_, p) in enumerate(_BANS)), re.I)
_STRENGTH = [s for s, _ in _BANS]
# "X is not allowed": the name stands before
_BANNED_AFTER = re.compile(
    r"(?P<name>`[^`\n]+`|[\w.$@/:+#-]+)\s+(?:is|are)\s+(?:not\s+allowed|forbidden|banned"
    r"|prohibited|not\s+permitted|off[- ]limits)\b",
    re.I,
)
_LIFTS = re.compile(
    rf"(?:\b(?:you\s+)?(?:can|may|could)\s+(?:now\s+|also\s+|still\s+)?{_USE}\s+"
    rf"|\bfeel\s+free\s+to\s+{_USE}\s+|\b(?:it'?s|it\s+is)\s+(?:ok|okay|fine|alright|allowed)"
    rf"\s+to\s+{_USE}\s+|\bgo\s+ahead\s+and\s+{_USE}\s+|\byou(?:'re|\s+are)\s+allowed\s+to"
    rf"\s+{_USE}\s+|(?:^|[.!?]\s+)(?:ok,?\s+|okay,?\s+|now,?\s+|please\s+)?{_USE}\s+)",
    re.I | re.M,
)
_ALLOWED_AFTER = re.compile(
    r"(?P<name>`[^`\n]+`|[\w.$@/:+#-]+)\s+(?:is|are)\s+(?:now\s+)?(?:allowed|ok|okay|fine"
    r"|permitted)\b",
    re.I,
)
_CLAUSE_END = re.compile(r"[.;!?\n]\s|[.;!?\n]$|\n|,\s*(?:but|just|only|instead|so|because)\b")
_NOUNS = (
    r"(?:librar(?:y|ies)|modules?|packages?|crates?|gems?|frameworks?|dependenc(?:y|ies)"
    r"|imports?|includes?|headers?|namespaces?|functions?|methods?|calls?|api|apis|lib|libs"
    r"|statements?|module's)"
)
_TRAILING_NOUN = re.compile(rf"\s+{_NOUNS}$", re.I)
_CUT = re.compile(
    r"\s+(?:for|in|to|because|since|as|when|here|there|anymore|any more|please|at|with|on"
    r"|this|that|from|here|again|at all|either|instead|now|yet|whatsoever|after|if|unless"
    r"|but|though|although|so|which|where|whenever|anywhere|inside|within|too|also|or)\b.*$",
    re.I,
)
_DETERMINERS = re.compile(r"^(?:the|any|a|an|other|more|such|of)\s+", re.I)
_TOKEN = re.compile(r"^(?:`([^`\n]+)`|[\"']([^\"'\n]+)[\"']|([A-Za-z_$@][\w.$@/:+#-]*))$")
# words that follow "no", "without", "avoid" in prose and name nothing a program imports
_STOP = set(
    """the a an any it this that these those them external third third-party thirdparty
    libraries library modules module packages package dependencies dependency anything other
    more extra additional such too so just only all same different new loops loop recursion
    comments comment classes class functions function global globals variables variable
    hardcoded hard-coded magic numbers semicolons tabs spaces emojis emoji markdown code
    explanation explanations text problem problems idea need way matter longer one error
    errors output change changes issue issues luck worries thanks thank doubt help sense
    difference reason point time results result response answer question questions longer
    matter further any other else python java javascript c c++ go rust ruby php swift
    kotlin sql using use importing calling me you we us i my your our their his her its
    mistakes mistake bugs bug problem typos type types comments docstrings docstring
    prints print-statements logging-statements hard coding coding spaghetti unnecessary
    unneeded needless unused duplicate duplicates redundant repetition numpy-like worry
    rush hurry pressure limit limits restrictions restriction""".split()
)


@dataclass(frozen=True)
class Ban:
    name: str
    strength: float
    turn: int
    sentence: str


def _names(rest: str, lenient: bool = False) -> list[str]:
    """The names a ban's words name, from the words after its trigger (`lenient`: the first
    word of an item of several words counts, as a lift may say "use NumPy, it's faster")."""
    end = _CLAUSE_END.search(rest)
    clause = rest[: end.start()] if end else rest[:200]
    names = []
    for i, item in enumerate(re.split(r",|\bor\b|\band\b|\bnor\b|/(?!\w)", clause)):
        item = _DETERMINERS.sub("", item.strip())
        item = _TRAILING_NOUN.sub("", _CUT.sub("", item)).strip().rstrip(":")
        item = item.removesuffix("'s").removesuffix("()")
        if lenient and item:
            item = item.split()[0].rstrip(".,;:!?")
        m = _TOKEN.match(item)
        if not m:
            if i == 0:
                continue  # "the built-in sort": not a name; a later item may still be one
            break
        name = (m.group(1) or m.group(2) or m.group(3)).strip().removesuffix("()")
        if name.lower() in _STOP or name.lower().endswith("ing") or len(name) < 2:
            continue
        names.append(name)
    return names


def _code_like(rest: str, name: str) -> bool:
    """A "no X" bans only what is plainly code."""
    head = rest.lstrip()[:1]
    if head in "`\"'":
        return True
    if re.match(rf"\s*{re.escape(name)}\s+{_NOUNS}\b", rest, re.I):
        return True
    return bool(re.search(r"[._:/$@#()]|\d|[a-z][A-Z]", name))


@lru_cache(maxsize=8192)
def _events(text: str) -> tuple[tuple[int, str, str, float, str], ...]:
    """The bans and lifts of one user message, in the order written:
    (position, "ban" or "lift", name, strength, sentence)."""
    words = prose(text)
    if not words:
        return ()
    found, triggers = [], []
    for m in _BAN.finditer(words):
        triggers.append((m.start(), m.end()))
        kind = int(m.lastgroup[1:])
        rest = words[m.end() :]
        if kind == 4 and re.match(r"\s*module named\b", rest, re.I):
            continue  # "No module named 'x'": an error message, not a ban
        for name in _names(rest):
            if kind == 4 and not _code_like(rest, name):
                continue
            found.append((m.start(), "ban", name, _STRENGTH[kind], _sentence(words, m.start())))
    for m in _BANNED_AFTER.finditer(words):
        name = m.group("name").strip("`")
        if name.lower() not in _STOP:
            found.append((m.start(), "ban", name, 1.0, _sentence(words, m.start())))
    for m in _LIFTS.finditer(words):
        if any(start < m.end() and m.start() < end for start, end in triggers):
            continue  # words a ban's trigger holds are the ban, not a lift
        for name in _names(words[m.end() :], lenient=True)[:5]:
            found.append((m.start(), "lift", name, 0.0, _sentence(words, m.start())))
    for m in _ALLOWED_AFTER.finditer(words):
        found.append((m.start(), "lift", m.group("name").strip("`"), 0.0, ""))
    return tuple(sorted(found))


def _sentence(text: str, at: int) -> str:
    stop = text.rfind(". ", 0, at)
    start = max(stop + 2 if stop >= 0 else 0, text.rfind("\n", 0, at) + 1)
    end = _CLAUSE_END.search(text, at)
    return quote(text[start : end.start() + 1 if end else len(text)])


def bans_in_force(history: Sequence[TurnView], turn: TurnView) -> list[Ban]:
    """The bans of the users' messages up to the turn's own that no later one lifted."""
    users = tuple((t.index, t.user) for t in history) + ((turn.index, turn.user),)
    return list(_in_force(users))


@lru_cache(maxsize=256)
def _in_force(users: tuple[tuple[int, str], ...]) -> tuple[Ban, ...]:
    active: dict[str, Ban] = {}
    for index, text in users:
        for _, kind, name, strength, sentence in _events(text):
            key = name.lower()
            if kind == "ban":
                active[key] = Ban(name, strength, index, sentence)
            else:
                active.pop(key, None)
    return tuple(active.values())


@lru_cache(maxsize=1024)
def _call(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w$.]){re.escape(name)}(?:\s*\(|\.\w)", re.I)


def _use(ban: Ban, blocks: Sequence[Block]) -> tuple[float, str] | None:
    """How the code uses the banned name: (1, the import line) or (0.9, the call's line)."""
    for block in blocks:
        for path, line in imports(block):
            if matches(ban.name, path):
                return 1.0, line
    for block in blocks:
        m = _call(ban.name).search(block.stripped)
        if m:
            return 0.9, quote(_line_at(block.stripped, m.start()))
    return None


def _line_at(text: str, at: int) -> str:
    end = text.find("\n", at)
    return text[text.rfind("\n", 0, at) + 1 : end if end >= 0 else len(text)].strip()


class MustNotViolation:
    name = "must-not-violation"
    version = "1"
    smell = "must_not_violation"

    def applies(self, history: Sequence[TurnView], turn: TurnView) -> bool:
        return bool(code_blocks(turn.reply)) and bool(bans_in_force(history, turn))

    def score(self, history: Sequence[TurnView], turn: TurnView) -> tuple[float, Evidence]:
        blocks = code_blocks(turn.reply)
        best = (0.0, Evidence((turn.index,), (), "no banned name is imported or called"))
        for ban in bans_in_force(history, turn):
            use = _use(ban, blocks)
            if use is None:
                continue
            score = ban.strength * use[0]
            if score > best[0]:
                how = "imported" if use[0] == 1.0 else "called"
                detail = f"{ban.name!r} is banned in turn {ban.turn} and {how} in turn {turn.index}"
                turns = tuple(sorted({ban.turn, turn.index}))
                best = (score, Evidence(turns, (ban.sentence, use[1]), detail))
        return best


DETECTOR = register(MustNotViolation())
