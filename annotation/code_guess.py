"""The language of a code block whose fence names none, guessed among the languages coding
conversations hold, fast enough for every card (benchmarks/render_bench.py prints it).

Pygments' own guess (`guess_lexer`) asks each of its ~600 lexers and takes 1 to 150 ms a
block here, and calls JavaScript GDScript and Rust CSS+Lasso. Instead: a shortlist of
languages, each with a few weighted signals (regular expressions on the block's first
lines); the best score of at least MIN_SCORE wins, else the block stays plain text. JSON is
whatever json.loads reads as an object or array. Guesses are cached by text."""

from __future__ import annotations

import json
import re
from functools import lru_cache

MIN_SCORE = 3
# a long block is judged on its beginning
SAMPLE = 6000

# language (a Pygments alias) -> [(weight, pattern)], in the order ties are settled
_SIGNALS: dict[str, list[tuple[int, str]]] = {
    "python": [
        (3, r"^\s*(async\s+)?def \w+\(.*\)\s*(->\s*[^:]+)?:\s*$"),
        (3, r"^#!.*\bpython"),
        (2, r"^\s*(from [\w.]+ import \w|import [\w.]+(\s+as \w+)?\s*$)"),
        (2, r"^\s*class \w+(\(.*\))?:\s*$"),
        (1, r"\bself\."),
        (1, r"^\s*(elif|except|try|finally|with|for|while|if)\b.*:\s*$"),
        (1, r"\b(None|True|False)\b"),
        (1, r"\bprint\("),
    ],
    "javascript": [
        (2, r"\b(const|let|var)\s+\w+\s*="),
        (2, r"\bfunction\b\s*\w*\s*\("),
        (2, r"\bconsole\.\w+\("),
        (2, r"\brequire\(['\"]|\bmodule\.exports\b|^\s*export (default|const|function)\b"),
        (2, r"^\s*import .* from ['\"]"),
        (1, r"=>"),
        (1, r"===|!=="),
        (1, r"\b(document|window)\.\w"),
    ],
    "java": [
        (3, r"\bSystem\.(out|err)\."),
        (3, r"^\s*import java\."),
        (2, r"\b(public|private|protected)\s+(static\s+)?(final\s+)?(class|void|int|String)\b"),
        (2, r"@Override\b|\bString\[\]"),
    ],
    "csharp": [
        (3, r"^\s*using System"),
        (3, r"\bConsole\.Write"),
        (1, r"^\s*namespace \w+"),
    ],
    "cpp": [
        (3, r"^\s*#include\s*<\w+>"),
        (3, r"\bstd::"),
        (2, r"\b(cout|cin|endl)\b"),
        (2, r"\btemplate\s*<"),
    ],
    "c": [
        (3, r"^\s*#include\s*[<\"][\w/]+\.h[>\"]"),
        (2, r"\b(printf|malloc|free|fprintf|sizeof)\s*\("),
        (2, r"\bint\s+main\s*\("),
        (1, r"\b(int|char|void|unsigned|struct)\s+\**\w+\s*[(\[;=,]"),
    ],
    "go": [
        (3, r"^package \w+\s*$"),
        (3, r"^func\s+(\([^)]*\)\s*)?\w+\s*\("),
        (2, r"\bfmt\.\w+\("),
        (2, r"^import \($|^import \""),
        (1, r":="),
    ],
    "rust": [
        (3, r"\bfn\s+\w+\s*(<[^>]*>)?\("),
        (2, r"\b\w+!\s*[(\[]"),
        (2, r"\bimpl\b|\bpub\s+(fn|struct|enum)\b|^\s*use \w+::"),
        (2, r"&mut\b|&self\b|::<"),
        (1, r"\blet\s+mut\b"),
    ],
    "ruby": [
        (2, r"^\s*def \w+[!?]?(\(.*\))?\s*$"),
        (2, r"^\s*end\s*$"),
        (2, r"\bdo\s*\|\w+(,\s*\w+)*\|"),
        (1, r"^\s*(puts|require|attr_accessor)\b"),
    ],
    "php": [
        (3, r"<\?php"),
        (3, r"\$this->"),
        (1, r"\$\w+\s*=.*;\s*$"),
    ],
    "bash": [
        (3, r"^#!\s*/(usr/)?bin/(env\s+)?(ba|z)?sh\b"),
        (
            2,
            r"^\s*(sudo|apt(-get)?|pip3?|npm|npx|yarn|git|cd|ls|mkdir|rm|cp|mv|export|curl|wget"
            r"|docker|make|chmod|cat|grep|source|python3?)\s",
        ),
        (2, r"^\s*\$ \w"),
        (2, r"\b(then|fi|done|esac)\s*$"),
        (2, r"^\s*(if|for|while)\s.*;\s*(then|do)\b"),
        (1, r"\$\{?\w+\}?|\$\("),
        (1, r"^\s*echo\s"),
    ],
    "sql": [
        (3, r"(?i)^\s*select\b[\s\S]+?\bfrom\b"),
        (
            3,
            r"(?i)^\s*(insert\s+into|create\s+(table|index|view)|update\s+\w+\s+set"
            r"|delete\s+from|alter\s+table|drop\s+table)\b",
        ),
        (1, r"(?i)\b(where|group\s+by|order\s+by|join|having)\b"),
    ],
    "html": [
        (
            3,
            r"(?i)^\s*<(!doctype|html|head|body|div|span|p|a|ul|ol|li|table|form|input|button"
            r"|script|style|section|nav|h[1-6])\b",
        ),
        (1, r"</\w+>"),
        (1, r"\b(class|href|id|src)=[\"']"),
    ],
    "css": [
        (2, r"^\s*[.#]?[\w-]+([\s,>+~]*[.#:]?[\w-]+)*\s*\{\s*$"),
        (2, r"^\s*[\w-]+\s*:\s*[^;{}]+;\s*$"),
    ],
    "yaml": [
        (1, r"^[\w-]+:\s*$"),
        (1, r"^[\w-]+:\s+\S"),
        (1, r"^\s*-\s+\w"),
        (1, r"^---\s*$"),
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
_SEMICOLON = re.compile(r";\s*$", re.M)
_C_FAMILY = {"javascript", "java", "csharp", "cpp", "c", "php"}


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
    try:
        return isinstance(json.loads(code), dict | list)
    except ValueError:
        return False
