"""The language of a code block whose fence names none, guessed among the languages coding
conversations hold, fast enough for every card (benchmarks/render_bench.py prints it).

Pygments' own guess (`guess_lexer`) asks each of its ~600 lexers: 11 ms for a 300-line
block here against 2 ms for this one, more in a fresh process, and it called a JavaScript
block GDScript and a Rust one CSS+Lasso. Instead: a shortlist of languages, each with a few
weighted signals (regular expressions on the block's first SAMPLE characters); the best
score of at least MIN_SCORE wins, else the block stays plain text. JSON is whatever
json.loads reads as an object or array. Guesses are cached by text."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from .jsondepth import too_deep

MIN_SCORE = 3
# a long block is judged on its beginning
SAMPLE = 3000

# language (a Pygments alias) -> [(weight, pattern)], in the order ties are settled. Patterns
# never cross a line ([ \t], not \s) and never nest ambiguous repeats: hostile text must not
# make a guess backtrack for seconds (tests/rendering/test_markdown.py has such a block).
_SIGNALS: dict[str, list[tuple[int, str]]] = {
    "python": [
        (3, r"^[ \t]*(async[ \t]+)?def \w+\(.*\)[ \t]*(->[^:\n]+)?:[ \t]*$"),
        (3, r"^#!.*\bpython"),
        (2, r"^[ \t]*(from [\w.]+ import \w|import [\w.]+( as \w+)?[ \t]*$)"),
        (2, r"^[ \t]*class \w+(\(.*\))?:[ \t]*$"),
        (1, r"\bself\."),
        (1, r"^[ \t]*(elif|except|try|finally|with|for|while|if)\b.*:[ \t]*$"),
        (1, r"\b(None|True|False)\b"),
        (1, r"\bprint\("),
    ],
    "javascript": [
        (2, r"\b(const|let|var)[ \t]+\w+[ \t]*="),
        (2, r"\bfunction\b[ \t]*\w*[ \t]*\("),
        (2, r"\bconsole\.\w+\("),
        (2, r"\brequire\(['\"]|\bmodule\.exports\b|^[ \t]*export (default|const|function)\b"),
        (2, r"^[ \t]*import .* from ['\"]"),
        (1, r"=>"),
        (1, r"===|!=="),
        (1, r"\b(document|window)\.\w"),
    ],
    "java": [
        (3, r"\bSystem\.(out|err)\."),
        (3, r"^[ \t]*import java\."),
        (2, r"\b(public|private|protected) (static )?(final )?(class|void|int|String)\b"),
        (2, r"@Override\b|\bString\[\]"),
    ],
    "csharp": [
        (3, r"^[ \t]*using System"),
        (3, r"\bConsole\.Write"),
        (1, r"^[ \t]*namespace \w+"),
    ],
    "cpp": [
        (3, r"^[ \t]*#include[ \t]*<\w+>"),
        (3, r"\bstd::"),
        (2, r"\b(cout|cin|endl)\b"),
        (2, r"\btemplate[ \t]*<"),
    ],
    "c": [
        (3, r"^[ \t]*#include[ \t]*[<\"][\w/]+\.h[>\"]"),
        (2, r"\b(printf|malloc|free|fprintf|sizeof)[ \t]*\("),
        (2, r"\bint[ \t]+main[ \t]*\("),
        (1, r"\b(int|char|void|unsigned|struct)[ \t]+\**\w+[ \t]*[(\[;=,]"),
    ],
    "go": [
        (3, r"^package \w+[ \t]*$"),
        (3, r"^func[ \t]+(\([^)\n]*\)[ \t]*)?\w+[ \t]*\("),
        (2, r"\bfmt\.\w+\("),
        (2, r"^import \($|^import \""),
        (1, r":="),
    ],
    "rust": [
        (3, r"\bfn[ \t]+\w+[ \t]*(<[^>\n]*>)?\("),
        (2, r"\b\w+![ \t]*[(\[]"),
        (2, r"\bimpl\b|\bpub[ \t]+(fn|struct|enum)\b|^[ \t]*use \w+::"),
        (2, r"&mut\b|&self\b|::<"),
        (1, r"\blet[ \t]+mut\b"),
    ],
    "ruby": [
        (2, r"^[ \t]*def \w+[!?]?(\(.*\))?[ \t]*$"),
        (2, r"^[ \t]*end[ \t]*$"),
        (2, r"\bdo[ \t]*\|\w+(, *\w+)*\|"),
        (1, r"^[ \t]*(puts|require|attr_accessor)\b"),
    ],
    "php": [
        (3, r"<\?php"),
        (3, r"\$this->"),
        (1, r"\$\w+[ \t]*=.*;[ \t]*$"),
    ],
    "bash": [
        (3, r"^#![ \t]*/(usr/)?bin/(env[ \t]+)?(ba|z)?sh\b"),
        (
            2,
            r"^[ \t]*(sudo|apt(-get)?|pip3?|npm|npx|yarn|git|cd|ls|mkdir|rm|cp|mv|export|curl"
            r"|wget|docker|make|chmod|cat|grep|source|python3?)[ \t]",
        ),
        (2, r"^[ \t]*\$ \w"),
        (2, r"\b(then|fi|done|esac)[ \t]*$"),
        (2, r"^[ \t]*(if|for|while)[ \t].*;[ \t]*(then|do)\b"),
        (1, r"\$\{?\w+\}?|\$\("),
        (1, r"^[ \t]*echo[ \t]"),
    ],
    "sql": [
        (3, r"(?i)^[ \t]*select\b[^;]{0,400}?\bfrom\b"),
        (
            3,
            r"(?i)^[ \t]*(insert[ \t]+into|create[ \t]+(table|index|view)|update[ \t]+\w+[ \t]+set"
            r"|delete[ \t]+from|alter[ \t]+table|drop[ \t]+table)\b",
        ),
        (1, r"(?i)\b(where|group by|order by|join|having)\b"),
    ],
    "html": [
        (
            3,
            r"(?i)^[ \t]*<(!doctype|html|head|body|div|span|p|a|ul|ol|li|table|form|input"
            r"|button|script|style|section|nav|h[1-6])\b",
        ),
        (1, r"</\w+>"),
        (1, r"\b(class|href|id|src)=[\"']"),
    ],
    "css": [
        # a selector line: words joined by combinators, classes, ids, pseudo-classes (each
        # word starts after a separator, so the pattern cannot backtrack through a word)
        (2, r"^[ \t]*[.#]?[\w-]+(([ \t]*[,>+~][ \t]*|[ \t]+|::?|[.#])[\w-]+)*[ \t]*\{[ \t]*$"),
        (2, r"^[ \t]*[\w-]+[ \t]*:[ \t]*[^;{}\n]+;[ \t]*$"),
    ],
    "yaml": [
        (1, r"^[\w-]+:[ \t]*$"),
        (1, r"^[\w-]+:[ \t]+\S"),
        (1, r"^[ \t]*-[ \t]+\w"),
        (1, r"^---[ \t]*$"),
    ],
    "diff": [
        (3, r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@"),
        (2, r"^(---|\+\+\+) \S"),
    ],
}
_COMPILED = {
    lang: [(w, re.compile(p, re.M)) for w, p in signals] for lang, signals in _SIGNALS.items()
}
# a statement terminator counts for the C family, once the family has a signal of its own
_SEMICOLON = re.compile(r";[ \t]*$", re.M)
_C_FAMILY = {"javascript", "java", "csharp", "cpp", "c", "php"}


def languages() -> list[str]:
    """The Pygments aliases a guess may give."""
    return [*_COMPILED, "json"]


@lru_cache(maxsize=1024)
def guess_language(code: str) -> str:
    """The Pygments alias of the block's likely language, or "" (plain text)."""
    sample = code[:SAMPLE]
    if sample.lstrip()[:1] in ("{", "[") and _is_json(code):
        return "json"
    best, best_score = "", 0
    semicolons = bool(_SEMICOLON.search(sample))
    for lang, signals in _COMPILED.items():
        score = sum(weight for weight, pattern in signals if pattern.search(sample))
        if score and semicolons and lang in _C_FAMILY:
            score += 1
        if score > best_score:
            best, best_score = lang, score
    return best if best_score >= MIN_SCORE else ""


def _is_json(code: str) -> bool:
    if too_deep(code):  # json would recurse into a RecursionError: text, not data
        return False
    try:
        return isinstance(json.loads(code), dict | list)
    except ValueError:
        return False
