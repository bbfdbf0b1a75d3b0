"""The coding filter (issue 10, point 2): which conversations are about programming, by the
study's rules, and a dry run that says what the rules would keep and drop, and why.

The rules are data (`DEFAULT_RULES`; a study's edited copy in `Study.coding_rules`, `{}` =
the defaults): the 20 languages of the TIOBE index of January 2025, each with its full
names, abbreviations and file extensions, and per term the case and context rules below.

A conversation **matches** when any of its texts (system prompt, every user message and
reply) holds an accepted mention of a language:
- a name or abbreviation as a whole word: not inside a longer word (`Pythonic`), not glued
  to `+` or `#` on its right (so `C` is not found in `C++` or `C#`), nor to `.` or `-` on its
  left (`Objective-C`, `www.python.org`). Letters and digits are ASCII here, so `用Go写`
  still holds the word `Go`. Matching ignores case, except for
- the terms listed in `exact_case`: they count only as written (`Go`, not `go`);
- the terms listed in `needs_context`: they count only with a code context within
  `context_window` characters in the same message: a word of `context_words`, a code fence,
  or an accepted mention of a term that needs no context (`Python and Go`);
- a mention inside one of the language's `stop_phrases` never counts (`from Scratch`,
  `Go ahead`, `Taylor Swift`);
- a file name with one of the extensions (`main.go`, `src/app.PY`, ` .rs files`); a
  one-letter extension needs a name of two characters or more (`a.m.` is a time);
- a code fence whose info string names the language (```` ```go ````, ```` ```r ````),
  whatever the case and context rules say: a fence is code.

A **near miss** is a mention that failed a rule: the wrong case (`let's go`), no code context,
inside a stop phrase, or (names of four letters or more) inside a longer word (`Javanese`).
The dry run (coding_report.py) counts them and shows examples, so a lead sees what the rules
drop before anything is dropped."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TIOBE_MONTH = "January 2025"

FIELDS = ("names", "abbreviations", "extensions", "exact_case", "needs_context", "stop_phrases")
RULE_KEYS = {"languages", "context_words", "lead_words", "context_window"}
LANGUAGE_KEYS = {"language", *FIELDS}
MIN_WINDOW, MAX_WINDOW = 10, 1000
# near misses "inside a longer word" only for terms this long: `c` is inside every word
MIN_INSIDE_WORD = 4
SNIPPET = 60  # characters of context on each side of a mention


# The defaults, as data: the TIOBE index of January 2025 in its order, one language a line. A
# short name that is also an English word or a letter needs its exact case and a code context
# (Go, C, R, Rust, Ruby, Swift, Scratch, Delphi, Pascal); a name that is a common word only in
# lower case needs its exact case (swift, rust); Java, Python and the rest match in any case.
DEFAULT_RULES = json.loads(Path(__file__).with_name("coding_rules.json").read_text("utf-8"))
DEFAULT_LANGUAGES = DEFAULT_RULES["languages"]


def default_rules() -> dict:
    return copy.deepcopy(DEFAULT_RULES)


def rules_for(study) -> dict:
    """The study's rules: its edited copy, or the defaults ({} stored)."""
    return copy.deepcopy(study.coding_rules) if study.coding_rules else default_rules()


def rules_digest(rules: dict) -> str:
    """A short fingerprint of a rule set, to quote which rules a run used."""
    canonical = json.dumps(rules, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


class RulesError(ValueError):
    """Rules that cannot be used; `errors` name the language and field of each problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


# -- validation -------------------------------------------------------------------------------

_EXTENSION = re.compile(r"\.[A-Za-z0-9_+]{1,12}")
_ALNUM = re.compile(r"[A-Za-z0-9]")


def validate_rules(data) -> list[str]:
    """Every problem of a rule set, each naming the language (or the setting) and the field.
    An empty list: the rules are usable."""
    if not isinstance(data, dict):
        return [f"the rules must be an object, not {type(data).__name__}"]
    errors = [f"unknown setting {key!r}" for key in sorted(set(data) - RULE_KEYS)]
    errors += _validate_settings(data)
    languages = data.get("languages")
    if not isinstance(languages, list) or not languages:
        return [*errors, "languages: give at least one language"]
    owners: dict[str, str] = {}  # term (lower case) -> the language that has it
    seen_names: set[str] = set()
    for i, entry in enumerate(languages):
        if not isinstance(entry, dict):
            errors.append(f"languages[{i}]: must be an object")
            continue
        name = entry.get("language")
        if not isinstance(name, str) or not name.strip():
            errors.append(f"languages[{i}]: language: give the language's name")
            continue
        if name.strip().lower() in seen_names:
            errors.append(f"{name}: language: listed twice")
        seen_names.add(name.strip().lower())
        errors += [f"{name}: unknown field {key!r}" for key in sorted(set(entry) - LANGUAGE_KEYS)]
        errors += _validate_language(name, entry, owners)
    return errors


def _validate_settings(data: dict) -> list[str]:
    errors = []
    for key in ("context_words", "lead_words"):
        words = data.get(key, [])
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            errors.append(f"{key}: must be a list of words, none empty")
    window = data.get("context_window", DEFAULT_RULES["context_window"])
    if isinstance(window, bool) or not isinstance(window, int):
        errors.append("context_window: must be a whole number of characters")
    elif not MIN_WINDOW <= window <= MAX_WINDOW:
        errors.append(
            f"context_window: must be between {MIN_WINDOW} and {MAX_WINDOW}, not {window}"
        )
    return errors


def _validate_language(name: str, entry: dict, owners: dict[str, str]) -> list[str]:
    errors = []
    for key in FIELDS:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors.append(f"{name}: {key}: must be a list of strings")
            entry = {**entry, key: []}
        elif any(v != v.strip() or not v for v in value):
            errors.append(f"{name}: {key}: an entry is empty or has spaces around it")
    if not entry.get("names"):
        errors.append(f"{name}: names: give at least one name")
    terms = [*entry.get("names", []), *entry.get("abbreviations", [])]
    for key in ("names", "abbreviations"):
        for term in entry.get(key, []):
            if term and not _ALNUM.search(term):
                errors.append(f"{name}: {key}: {term!r} has no letter or digit")
            if term and "," in term:
                errors.append(f"{name}: {key}: {term!r} contains a comma")
    for ext in entry.get("extensions", []):
        if ext and not _EXTENSION.fullmatch(ext):
            errors.append(
                f"{name}: extensions: {ext!r} is not a file extension (a dot, then letters or "
                "digits, e.g. '.py')"
            )
    for term in [*terms, *entry.get("extensions", [])]:
        owner = owners.setdefault(term.lower(), name)
        if owner != name:
            errors.append(f"{name}: {term!r} is already a term of {owner}")
    for key in ("exact_case", "needs_context"):
        for term in entry.get(key, []):
            if term and term not in terms:
                errors.append(f"{name}: {key}: {term!r} is not one of its names or abbreviations")
    lowered = [t.lower() for t in terms]
    for phrase in entry.get("stop_phrases", []):
        if phrase and not any(t in phrase.lower() for t in lowered):
            errors.append(
                f"{name}: stop_phrases: {phrase!r} contains none of its names or abbreviations"
            )
    return errors


def checked_rules(data) -> dict:
    """`data` if usable, else RulesError naming every problem."""
    errors = validate_rules(data)
    if errors:
        raise RulesError(errors)
    return data


# -- matching ---------------------------------------------------------------------------------

_WORD = "A-Za-z0-9_"
_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*\{?\.?([A-Za-z0-9_+#.\-/]+)", re.MULTILINE)


@dataclass(frozen=True)
class _Term:
    language: str
    term: str
    exact: bool
    context: bool
    stops: tuple[str, ...]


@dataclass
class Mention:
    """One mention of a language in one text: accepted, or a near miss with its reason."""

    language: str
    term: str
    where: str  # "turn 2 user", "turn 2 reply", "system prompt"
    start: int
    end: int
    text: str  # the whole text it was found in (for the snippet)
    reason: str = ""  # empty: accepted

    @property
    def accepted(self) -> bool:
        return not self.reason

    def snippet(self) -> dict:
        before = self.text[max(0, self.start - SNIPPET) : self.start]
        after = self.text[self.end : self.end + SNIPPET]
        return {
            "where": self.where,
            "term": self.term,
            "before": ("…" if self.start > SNIPPET else "") + _flat(before),
            "match": _flat(self.text[self.start : self.end]),
            "after": _flat(after) + ("…" if self.end + SNIPPET < len(self.text) else ""),
        }


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _alternation(terms: Iterable[str]) -> str:
    return "|".join(re.escape(t) for t in sorted(set(terms), key=lambda t: (-len(t), t)))


def _bounded(terms: list[str]) -> str:
    """A term as a whole word (module docstring): nothing of a word, nor `.` or `-`, on its
    left; nothing of a word, nor `+` or `#`, on its right; not followed by `.` and a letter."""
    word_end = [t for t in terms if re.match(f"[{_WORD}]", t[-1])]
    other_end = [t for t in terms if t not in word_end]
    parts = []
    if word_end:
        parts.append(f"(?:{_alternation(word_end)})(?![{_WORD}+#])(?!\\.[{_WORD}])")
    if other_end:
        parts.append(f"(?:{_alternation(other_end)})(?![+#])")
    return f"(?<![{_WORD}.\\-])(?:{'|'.join(parts)})"


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _file_name(text: str, dot: int) -> int | None:
    """Where the file name ending at `dot` starts (`dot` itself for a bare ".py"), or None
    when it is no file name: it starts with a digit or follows another dot."""
    start = dot
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    if start > 0 and text[start - 1] == ".":
        return None
    while start < dot and text[start] == "-":
        start += 1
    if start < dot and not (
        text[start].isascii() and (text[start].isalpha() or text[start] == "_")
    ):
        return None
    return start


class Matcher:
    """Rules compiled once: a few regular expressions over every term of every language."""

    def __init__(self, rules: dict) -> None:
        checked_rules(rules)
        self.rules = rules
        self.window = rules.get("context_window", DEFAULT_RULES["context_window"])
        self.languages = [entry["language"] for entry in rules["languages"]]
        self.terms: dict[str, list[_Term]] = defaultdict(list)
        self.extensions: dict[str, str] = {}  # ".py" -> Python (lower case)
        self.fence_tags: dict[str, str] = {}  # "go" -> Go
        long_terms = []
        for entry in rules["languages"]:
            language = entry["language"]
            stops = tuple(p.lower() for p in entry.get("stop_phrases", []))
            for term in [*entry["names"], *entry.get("abbreviations", [])]:
                spec = _Term(
                    language,
                    term,
                    exact=term in entry.get("exact_case", []),
                    context=term in entry.get("needs_context", []),
                    stops=stops,
                )
                self.terms[term.lower()].append(spec)
                self.fence_tags.setdefault(term.lower().replace(" ", ""), language)
                if len(term) >= MIN_INSIDE_WORD and re.fullmatch(f"[{_WORD}]+", term):
                    long_terms.append(term)
            for ext in entry.get("extensions", []):
                self.extensions[ext.lower()] = language
                self.fence_tags.setdefault(ext.lower()[1:], language)
        self.term_re = re.compile(_bounded(list(self.terms)), re.IGNORECASE)
        # a longer word that starts with a name ("Pythonic", "Javanese"); not any word that
        # holds one, or every "trust" would be a near miss of Rust
        self.prefixes = sorted({t.lower() for t in long_terms}, key=len, reverse=True)
        self.inside_re = (
            re.compile(f"(?<![{_WORD}])(?:{_alternation(long_terms)})[{_WORD}]+", re.IGNORECASE)
            if long_terms
            else None
        )
        exts = _alternation(e[1:] for e in self.extensions)
        # the dot first: a literal the regex engine finds fast; the file name before it is
        # checked by _file_name (a pattern that starts with the name tries every position)
        self.ext_re = re.compile(f"\\.(?:{exts})(?![{_WORD}])(?!\\.[{_WORD}])", re.IGNORECASE)
        words = rules.get("context_words", [])
        ascii_words = [w for w in words if w.isascii()]
        other_words = [w for w in words if not w.isascii()]
        pattern = []
        if ascii_words:
            pattern.append(f"(?<![{_WORD}])(?:{_alternation(ascii_words)})(?![{_WORD}])")
        if other_words:
            pattern.append(_alternation(other_words))  # no word boundaries in CJK text
        pattern.append("```|~~~")
        self.context_re = re.compile("|".join(pattern), re.IGNORECASE)
        leads = rules.get("lead_words", [])
        self.lead_re = (
            re.compile(f"(?<![{_WORD}])(?:{_alternation(leads)})[ \t]+$", re.IGNORECASE)
            if leads
            else None
        )

    def scan(self, where: str, text: str) -> list[Mention]:
        """Every mention in one text, accepted or near miss, in text order."""
        if not text:
            return []
        found: list[Mention] = []
        for m in _FENCE.finditer(text):
            language = self.fence_tags.get(m.group(1).lower())
            if language is not None:
                found.append(Mention(language, m.group(1), where, m.start(1), m.end(1), text))
        for m in self.ext_re.finditer(text):
            start = _file_name(text, m.start())
            ext = m.group().lower()
            if start is None or (len(ext) == 2 and 0 < m.start() - start < 2):
                continue  # "1.c", "www.x.py"; "a.m.", "p.m": a one-letter extension needs a name
            found.append(Mention(self.extensions[ext], ext, where, start, m.end(), text))
        pending: list[tuple[Mention, list[_Term]]] = []
        taken = [(x.start, x.end) for x in found]
        for m in self.term_re.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue  # "main.go": the file name already counted
            specs = self.terms[m.group().lower()]
            mention = Mention(specs[0].language, m.group(), where, m.start(), m.end(), text)
            pending.append((mention, specs))
        # pass 1: everything but the context rule; pass 2: context, which may lean on pass 1
        needs_context = []
        for mention, specs in pending:
            reason, waiting = self._judge(mention, specs, text)
            if waiting:
                needs_context.append((mention, waiting))
            else:
                mention.reason = reason
            found.append(mention)
        waiting = {id(mention) for mention, _ in needs_context}
        anchors = [(x.start, x.end) for x in found if x.accepted and id(x) not in waiting]
        for mention, spec in needs_context:
            lo, hi = max(0, mention.start - self.window), mention.end + self.window
            near = any(lo <= s and e <= hi for s, e in anchors)
            lead = self.lead_re is not None and self.lead_re.search(
                text, max(0, mention.start - 20), mention.start
            )
            if near or lead or self._has_context(text, lo, hi, mention):
                mention.language, mention.reason = spec.language, ""
            else:
                mention.reason = f"no code context within {self.window} characters"
        if self.inside_re is not None:
            spans = [(x.start, x.end) for x in found]
            for m in self.inside_re.finditer(text):
                word = m.group()
                overlaps = any(s < m.end() and m.start() < e for s, e in spans)
                if word.lower() in self.terms or overlaps:
                    continue
                language = self._inside_language(word)
                if language:
                    reason = f"inside the word {word!r}"
                    found.append(Mention(language, word, where, m.start(), m.end(), text, reason))
        found.sort(key=lambda x: x.start)
        return found

    def _judge(self, mention: Mention, specs: list[_Term], text: str) -> tuple[str, _Term | None]:
        """(reason it fails, or "", and the spec still waiting for the context rule)."""
        reason = ""
        for spec in specs:
            if spec.exact and mention.term != spec.term:
                reason = reason or f"{mention.term!r} is not written {spec.term!r}"
                continue
            stop = self._stop_phrase(spec, text, mention)
            if stop:
                reason = reason or f"part of the stop phrase {stop!r}"
                continue
            mention.language = spec.language
            if spec.context:
                return "", spec
            return "", None
        return reason, None

    @staticmethod
    def _stop_phrase(spec: _Term, text: str, mention: Mention) -> str:
        if not spec.stops:
            return ""
        lo = max(0, mention.start - 60)
        region = text[lo : mention.end + 60].lower()
        for phrase in spec.stops:
            for m in re.finditer(f"(?<![{_WORD}]){re.escape(phrase)}(?![{_WORD}])", region):
                if m.start() + lo <= mention.start and mention.end <= m.end() + lo:
                    return phrase
        return ""

    def _has_context(self, text: str, lo: int, hi: int, mention: Mention) -> bool:
        for m in self.context_re.finditer(text, lo, min(hi, len(text))):
            if not (m.start() < mention.end and mention.start < m.end()):
                return True
        return False

    def _inside_language(self, word: str) -> str:
        lowered = word.lower()
        for prefix in self.prefixes:
            if lowered.startswith(prefix):
                return self.terms[prefix][0].language
        return ""


_default_matcher: Matcher | None = None


def _matcher(rules: dict | None) -> Matcher:
    global _default_matcher
    if rules is not None:
        return Matcher(rules)
    if _default_matcher is None:
        _default_matcher = Matcher(default_rules())
    return _default_matcher


def matches(text: str, rules: dict | None = None) -> list[str]:
    """The languages one text mentions by the rules (the defaults if none), in text order."""
    matcher = _matcher(rules)
    found = []
    for mention in matcher.scan("text", text):
        if mention.accepted and mention.language not in found:
            found.append(mention.language)
    return found


def near_misses(text: str, rules: dict | None = None) -> list[Mention]:
    return [m for m in _matcher(rules).scan("text", text) if not m.accepted]
