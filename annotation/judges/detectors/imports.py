"""What a code block imports, for the TIOBE-20 languages of the coding filter (January 2025,
annotation/intake/coding_rules.json) and a few kin, each by its own import forms:

- Python: `import a.b as c, d`, `from a.b import c, d`, `__import__("a")`,
  `import_module("a")`;
- JavaScript/TypeScript: `import ... from "a"`, `import "a"`, `export ... from "a"`,
  `require("a")`, `import("a")`, `import {b} from`;
- Java, Kotlin, Scala, Groovy: `import [static] a.b.C;`, `import a.b.*`, `import a.b.{C, D}`,
  `import a.b.C as D`;
- C, C++ (Objective-C, CUDA): `#include <a/b.h>`, `#include "a.h"`, `#import`, C++20
  `import <a>;` / `import a;`;
- C#: `using [static] a.b;`, `using x = a.b;`, `global using a.b;`;
- Go: `import "a/b"`, `import x "a/b"`, `import ( ... )`;
- Rust: `use a::b::{c, d};`, `extern crate a;`;
- PHP: `use A\\B;`, `require`/`include`[`_once`] `"a.php"`;
- Ruby: `require "a"`, `require_relative "a"`, `gem "a"`, `load "a"`;
- R: `library(a)`, `require(a)`, `requireNamespace("a")`, `a::f`;
- Swift: `import a`, `import struct a.B`;
- Perl: `use A::B;`, `require A::B;`;
- MATLAB: `import a.b.*` (functions are called, not imported: the call check covers them);
- Visual Basic: `Imports a.b`;
- Delphi/Object Pascal: `uses a, b in 'b.pas', c;`;
- Fortran: `use a`, `use, intrinsic :: a`, `include "a"`;
- Assembly: `%include "a"` (NASM), `include a` / `includelib a` (MASM), `.include "a"`
  (GAS), `extern a`;
- COBOL: `COPY a.`, `CALL "a"`;
- SQL: `CREATE EXTENSION a` (PostgreSQL). SQL has no imports otherwise: a banned function
  is caught by the call check, a banned keyword (JOIN, a subquery) is not (a construct, not
  a name).

Not covered: Scratch (a visual language: no text to read). A block whose family is not
known (an unnamed fence) is read with every form.

A module path is returned lower-cased with its separators (`::`, `/`, `\\`, `.`) made dots
and a header's or source file's extension taken off; imported names (`from a import b`,
`import {b}`) are returned too, as paths of their own."""

from __future__ import annotations

import re
from functools import lru_cache

from .code import Block, quote

_NAME_LIST = r"[\w.*]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.*]+(?:[ \t]+as[ \t]+\w+)?)*"
_Q = r"""["'`]([^"'`\n]+)["'`]"""

_FORMS: dict[str, list[str]] = {
    "python": [
        r"^[ \t]*import[ \t]+(?P<list>" + _NAME_LIST + ")",
        r"^[ \t]*from[ \t]+(?P<path>\.*[\w.]+)[ \t]+import[ \t]+\(?(?P<list>[\w \t,*\n]+?)\)?"
        r"[ \t]*$",
        r"\b(?:__import__|import_module)\(\s*" + _Q,
    ],
    "javascript": [
        r"^[ \t]*(?:import|export)\b[^;'\"`]*?\bfrom[ \t]*" + _Q,
        r"^[ \t]*import[ \t]*" + _Q,
        r"\b(?:require|import)\(\s*" + _Q + r"\s*\)",
        r"^[ \t]*import[ \t]+(?:type[ \t]+)?\{(?P<list>[^}]*)\}[ \t]*from",
    ],
    "java": [
        r"^[ \t]*import[ \t]+(?:static[ \t]+)?(?P<path>[\w.]+?)(?:\.\*|\._|\.\{(?P<list>[^}]*)\})?"
        r"(?:[ \t]+as[ \t]+\w+)?[ \t]*;?[ \t]*$",
    ],
    "c": [
        r"^[ \t]*#[ \t]*(?:include|import)[ \t]*[<\"]([^>\"\n]+)[>\"]",
        r"^[ \t]*(?:export[ \t]+)?import[ \t]+<?([\w./:]+)>?[ \t]*;",
    ],
    "csharp": [
        r"^[ \t]*(?:global[ \t]+)?using[ \t]+(?:static[ \t]+)?(?:\w+[ \t]*=[ \t]*)?([\w.]+)[ \t]*;",
    ],
    "go": [
        r"^[ \t]*import[ \t]+(?:[\w.]+[ \t]+)?\"([^\"\n]+)\"",
        r"^[ \t]*import[ \t]*\((?P<group>[^)]*)\)",
    ],
    "rust": [
        r"^[ \t]*(?:pub(?:\([\w ]+\))?[ \t]+)?use[ \t]+(?P<tree>[\w:{}, \t\n*]+?)[ \t]*;",
        r"^[ \t]*extern[ \t]+crate[ \t]+(\w+)",
    ],
    "php": [
        r"^[ \t]*use[ \t]+(?:function[ \t]+|const[ \t]+)?([\w\\]+)",
        r"\b(?:require|include)(?:_once)?[ \t]*\(?[ \t]*" + _Q,
    ],
    "ruby": [r"^[ \t]*(?:require|require_relative|gem|load)[ \t]*\(?[ \t]*" + _Q],
    "r": [
        r"\b(?:library|require|requireNamespace|loadNamespace)\(\s*[\"']?([\w.]+)",
        r"\b([A-Za-z][\w.]*):::?[A-Za-z_.]",
    ],
    "swift": [
        r"^[ \t]*(?:@\w+[ \t]+)*import[ \t]+(?:(?:class|struct|func|enum|protocol|typealias"
        r"|var|let)[ \t]+)?([\w.]+)"
    ],
    "perl": [r"^[ \t]*(?:use|require)[ \t]+([A-Za-z][\w:]*)"],
    "matlab": [r"^[ \t]*import[ \t]+([\w.]+?)(?:\.\*)?[ \t]*;?[ \t]*$"],
    "vb": [r"(?im)^[ \t]*Imports[ \t]+(?:\w+[ \t]*=[ \t]*)?([\w.]+)"],
    "delphi": [r"(?i)^[ \t]*uses\b(?P<list>[^;]+);"],
    "fortran": [
        r"(?i)^[ \t]*use\b(?:[ \t]*,[ \t]*(?:non_)?intrinsic[ \t]*::)?[ \t]*(?:::[ \t]*)?(\w+)",
        r"(?i)^[ \t]*include[ \t]+" + _Q,
    ],
    "asm": [
        r"(?i)^[ \t]*[%.]?include[ \t]+[\"<]?([\w./\\]+)",
        r"(?i)^[ \t]*includelib[ \t]+([\w./\\]+)",
        r"(?i)^[ \t]*(?:extern|extrn)[ \t]+_?(\w+)",
    ],
    "cobol": [r"(?i)^[ \t]*COPY[ \t]+[\"']?([\w-]+)", r"(?i)\bCALL[ \t]+" + _Q],
    "sql": [r"(?i)\bCREATE[ \t]+EXTENSION[ \t]+(?:IF[ \t]+NOT[ \t]+EXISTS[ \t]+)?\"?(\w+)"],
}
# the families whose forms are the same as another's
_SAME = {"shell": (), "lua": (), "markup": ("javascript",), "css": ()}
_COMPILED = {fam: [re.compile(p, re.M) for p in forms] for fam, forms in _FORMS.items()}
_EVERY = [p for patterns in _COMPILED.values() for p in patterns]

_SEP = re.compile(r"::|[/\\]")
_HEADER = re.compile(r"\.(h|hh|hpp|hxx|inc|asm|pas|php|rb|py|js|ts|mjs|cjs)$")


def _patterns(fam: str) -> list[re.Pattern]:
    if fam in _COMPILED:
        return _COMPILED[fam]
    if fam in _SAME:
        return [p for f in _SAME[fam] for p in _COMPILED[f]]
    return _EVERY  # a language not known here: every form


@lru_cache(maxsize=8192)
def imports(block: Block) -> tuple[tuple[str, str], ...]:
    """(module path, the line that imports it) for each import of the block."""
    text = block.stripped
    found: list[tuple[str, str]] = []
    for pattern in _patterns(block.family):
        for m in pattern.finditer(text):
            line = quote(text[text.rfind("\n", 0, m.start()) + 1 : m.end()])
            for path in _paths(m):
                found.append((path, line))
    return tuple(found)


def _paths(m: re.Match) -> list[str]:
    named = m.groupdict()
    raw: list[str] = []
    if not named:
        raw.extend(g for g in m.groups() if g)
    if named.get("tree"):  # Rust: the path before the braces, and every name in the tree
        tree = named["tree"]
        raw.append(tree.split("{", 1)[0].rstrip(":"))
        raw.extend(re.findall(r"\w+", tree))
    if named.get("group"):  # Go: import ( "a" x "b" )
        raw.extend(re.findall(r'"([^"\n]+)"', named["group"]))
    if named.get("path"):
        raw.append(named["path"])
    for item in re.split(r"[,\n]", named.get("list") or ""):
        words = item.split()
        if words and words[0] not in ("in", "as"):
            raw.append(words[0])  # "a as b", "b in 'b.pas'": the first word is the name
    out = []
    for path in raw:
        path = _HEADER.sub("", _SEP.sub(".", path.strip().strip("'\"<>"))).lower()
        path = path.strip(".* \t").lstrip("@")
        if path:
            out.append(path)
    return out


def matches(banned: str, path: str) -> bool:
    """Whether an import of `path` is an import of the banned name: the banned name's parts
    are a run of the path's parts (`numpy` in `numpy.linalg`, `Linq` in `System.Linq`,
    `gorilla/mux` in `github.com/gorilla/mux`), or a C++ `std::` name is its header
    (`std::regex`, `<regex>`)."""
    banned = _HEADER.sub("", _SEP.sub(".", banned)).lower().lstrip("@").strip(".")
    if not banned:
        return False
    if path == banned or f".{banned}." in f".{path}.":
        return True
    return banned.startswith("std.") and path == banned[4:]
