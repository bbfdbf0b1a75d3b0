"""`signature-mismatch` (TAXONOMY.md `signature_mismatch`), for Python: a call in the reply
to a function defined earlier in the conversation whose arguments cannot bind to that
definition's signature.

- Definitions: the module-level functions and classes (and the classes' methods) of the
  Python code (fences named Python, or unnamed) of every earlier message, the users' pasted
  code included; a later definition replaces an earlier one. A definition with a decorator
  that may change its signature (anything but staticmethod, classmethod, property,
  cached_property, lru_cache, cache, wraps, abstractmethod, override) is not used, nor is a
  class with decorators (a dataclass), a metaclass or `__new__`, nor a class without its own
  `__init__` that has bases. Definitions are read from the block's skeleton (its def and
  class headers, bodies left out), so a syntax error elsewhere in it does not hide them.
- Calls: in the reply's Python code, `f(...)` to a function or class defined earlier, and
  `x.m(...)` to a method that exactly one earlier class defines and no built-in type has
  (`x.get(...)` may be a dict's). A name the reply defines, imports or assigns itself is its
  own and not checked. A call with `*args` or `**kwargs` cannot be decided: skipped.
  Unparseable code is skipped.
- Binding: inspect.Signature built from the `def` (positional-only, defaults, *args,
  keyword-only, **kwargs; `self`/`cls` taken off a method called on an instance or a class
  method), `Signature.bind` with the call's arguments; a TypeError is a mismatch.
- Score: 1 for a call to a function or class, 0.8 for a method call (the object's class is
  not known, only the method's name); 0 when every call binds.

It applies to a turn whose reply calls a function defined earlier. Evidence: the
definition's turn and this one, the `def` line and the call, the binding's message."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .base import Evidence, TurnView, register
from .code import Block, quote
from .code import blocks as code_blocks

_PYTHON = {"python", "generic"}
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_SAFE_DECORATORS = {
    "staticmethod",
    "classmethod",
    "property",
    "cached_property",
    "lru_cache",
    "cache",
    "wraps",
    "abstractmethod",
    "override",
}
# a method name a built-in object also has: `x.name(...)` may be that object's
_BUILTIN_METHODS = {
    name
    for kind in (object, list, dict, set, str, bytes, int, float, tuple, frozenset, bytearray)
    for name in dir(kind)
} | {"read", "write", "close", "readline", "readlines", "seek", "flush"}
_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Definition:
    name: str  # "f", "Bus" (its __init__), "Bus.subscribe"
    signature: inspect.Signature
    turn: int
    line: str  # the def line as written
    method: bool  # a method (called on an instance: self is taken off)


def build_signature(args: ast.arguments, drop_first: bool = False) -> inspect.Signature:
    """The signature a `def` with these arguments has (its first parameter taken off for a
    method bound to an instance or a class)."""
    P = inspect.Parameter
    positional = [*args.posonlyargs, *args.args]
    defaults = [_EMPTY] * (len(positional) - len(args.defaults)) + [0] * len(args.defaults)
    kinds = [P.POSITIONAL_ONLY] * len(args.posonlyargs) + [P.POSITIONAL_OR_KEYWORD] * len(args.args)
    params = [
        P(a.arg, kind, default=d) for a, kind, d in zip(positional, kinds, defaults, strict=True)
    ]
    if args.vararg:
        params.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(P(a.arg, P.KEYWORD_ONLY, default=_EMPTY if d is None else 0))
    if args.kwarg:
        params.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    if drop_first and positional:
        params.pop(0)
    return inspect.Signature(params)


def bind(signature: inspect.Signature, args: Sequence, keywords: Sequence[str]) -> None:
    """Binds a call's arguments to the signature as Python does; TypeError if they do not.
    (Signature.bind refuses a keyword named like a positional-only parameter even where
    **kwargs takes it, as Python does: such a keyword is passed under a name of its own.)"""
    params = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    named = {}
    for name in keywords:
        positional_only = name in params and params[name].kind is inspect.Parameter.POSITIONAL_ONLY
        named[name + " (to **kwargs)" if takes_any and positional_only else name] = None
    signature.bind(*args, **named)


@lru_cache(maxsize=8192)
def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _decorators_safe(node) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name not in _SAFE_DECORATORS:
            return False
    return True


_HEADER = ("@", "def ", "def\t", "async ", "class ")


def skeleton(text: str) -> tuple[str, list[int]]:
    """The block's top-level definitions and its classes' methods, their bodies made `pass`
    (with the line each skeleton line comes from): parsing a skeleton costs a fraction of
    the whole code, and a definition is read the same from either. (A syntax error
    elsewhere in the block then does not hide its definitions.)"""
    lines = text.split("\n")
    out: list[str] = []
    origin: list[int] = []
    in_class, body_indent = False, None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if indent == 0:
            in_class = stripped.startswith("class ")
            body_indent = None
        elif in_class and body_indent is None:
            body_indent = indent
        keep = stripped.startswith(_HEADER) and (
            indent == 0 or (in_class and indent == body_indent)
        )
        if not keep:
            i += 1
            continue
        i = _header(lines, i, out, origin)
    return "\n".join(out), origin


def _header(lines: list[str], i: int, out: list[str], origin: list[int]) -> int:
    """Copies the header (decorator, def or class, over as many lines as its brackets
    take) starting at line i, and a `pass` body after a def or class; the next line."""
    depth, start = 0, i
    while i < len(lines) and i - start < 30:
        code_part = lines[i].split("#", 1)[0]
        depth += sum(code_part.count(c) for c in "([{") - sum(code_part.count(c) for c in ")]}")
        out.append(lines[i])
        origin.append(i)
        i += 1
        if depth <= 0:
            break
    last = out[-1].split("#", 1)[0].rstrip()
    first = lines[start].lstrip()
    if not first.startswith("@") and last.endswith(":"):
        indent = len(lines[start]) - len(first)
        out.append(" " * (indent + 4) + "pass")
        origin.append(start)
    return i


def _def_line(block: Block, node, origin: list[int]) -> str:
    at = origin[node.lineno - 1] if node.lineno <= len(origin) else -1
    lines = block.lines
    return quote(lines[at].strip()) if 0 <= at < len(lines) else ""


@lru_cache(maxsize=8192)
def definitions(block: Block, turn: int) -> tuple[Definition, ...]:
    """The functions, classes and methods a Python block defines at its top level."""
    text, origin = skeleton(block.text)
    tree = _parse(text)
    return () if tree is None else read_definitions(tree, block, turn, origin)


def read_definitions(tree: ast.Module, block: Block, turn: int, origin) -> tuple:
    """The definitions of a parsed block (`origin`: the block's line of each tree line)."""
    out = []
    for node in tree.body:
        try:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if _decorators_safe(node):
                    sig = build_signature(node.args)
                    line = _def_line(block, node, origin)
                    out.append(Definition(node.name, sig, turn, line, False))
            elif isinstance(node, ast.ClassDef):
                out.extend(_class(block, node, turn, origin))
        except ValueError:  # duplicate parameter names: no signature
            continue
    return tuple(out)


def _class(block: Block, node: ast.ClassDef, turn: int, origin) -> list[Definition]:
    methods = {
        n.name: n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    out = []
    plain = not node.decorator_list and not node.keywords and "__new__" not in methods
    init = methods.get("__init__")
    if plain and init is not None and _decorators_safe(init):
        sig = build_signature(init.args, drop_first=True)
        out.append(Definition(node.name, sig, turn, _def_line(block, init, origin), False))
    elif plain and init is None and not node.bases:
        out.append(
            Definition(node.name, inspect.Signature(), turn, _def_line(block, node, origin), False)
        )
    for name, m in methods.items():
        if name.startswith("__") or not _decorators_safe(m):
            continue
        kinds = {getattr(d, "id", "") for d in m.decorator_list}
        if "property" in kinds or "cached_property" in kinds:
            continue
        drop = "staticmethod" not in kinds
        sig = build_signature(m.args, drop_first=drop)
        out.append(Definition(f"{node.name}.{name}", sig, turn, _def_line(block, m, origin), True))
    return out


def _python_blocks(text: str) -> list[Block]:
    return [b for b in code_blocks(text) if b.family in _PYTHON]


@lru_cache(maxsize=256)
def _known(messages: tuple[tuple[int, str], ...]) -> dict[str, Definition]:
    """Every definition of the messages, a later one replacing an earlier one."""
    known: dict[str, Definition] = {}
    for turn, text in messages:
        for d in _message_definitions(turn, text):
            known[d.name] = d
    return known


@lru_cache(maxsize=8192)
def _message_definitions(turn: int, text: str) -> tuple[Definition, ...]:
    """The definitions of one message's Python blocks, in order (a message is read once,
    however many later turns look back at it)."""
    out: list[Definition] = []
    for block in _python_blocks(text):
        if _DEF.search(block.text):
            out.extend(definitions(block, turn))
    return tuple(out)


def _methods(known: dict[str, Definition]) -> dict[str, Definition]:
    """Methods by their bare name, where exactly one class defines it."""
    by_name: dict[str, list[Definition]] = {}
    for d in known.values():
        if d.method:
            by_name.setdefault(d.name.split(".", 1)[1], []).append(d)
    return {
        name: ds[0] for name, ds in by_name.items() if len(ds) == 1 and name not in _BUILTIN_METHODS
    }


# a name called: `name(` (a cheap test before parsing, with the set of earlier names)
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _read(tree: ast.Module) -> tuple[set[str], list[ast.Call]]:
    """In one walk: what the reply's code defines, imports or assigns (its own names, not
    the earlier ones), and its calls."""
    own, calls = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                own.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            own.update((a.asname or a.name).split(".")[0] for a in node.names)
    return own, calls


@lru_cache(maxsize=64)
def analyse(history: tuple[TurnView, ...], turn: TurnView) -> tuple[int, list]:
    """How many calls of the reply resolve to an earlier definition (and can be decided),
    and (score, definition, call text, TypeError message) for each that cannot bind."""
    blocks = _python_blocks(turn.reply)
    if not blocks:
        return 0, []
    messages = tuple((t.index, text) for t in history for text in (t.user, t.reply))
    known = _known(messages + ((turn.index, turn.user),))
    if not known:
        return 0, []
    names = {d.name.rsplit(".", 1)[-1] for d in known.values()}
    checked, found = 0, []
    for block in blocks:
        called = (names & set(_CALLED.findall(block.text))) - set(_DEF.findall(block.text))
        if not called:
            continue  # no call of an earlier name it does not define itself: nothing to parse
        tree = _parse(block.text)
        if tree is not None:
            n, mismatches = _check(tree, block, known)
            checked += n
            found.extend(mismatches)
    return checked, found


def _check(tree: ast.Module, block: Block, known: dict[str, Definition]):
    own, calls = _read(tree)
    methods = _methods(known)
    checked, out = 0, []
    for node in calls:
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue
        if any(k.arg is None for k in node.keywords):
            continue
        target, weight = _target(node.func, known, methods, own)
        if target is None:
            continue
        checked += 1
        try:
            bind(target.signature, node.args, [k.arg for k in node.keywords])
        except TypeError as error:
            call = ast.get_source_segment(block.text, node) or ast.unparse(node)
            out.append((weight, target, quote(call), str(error)))
    return checked, out


def _target(func, known, methods, own):
    if isinstance(func, ast.Name) and func.id not in own and func.id in known:
        d = known[func.id]
        return (d, 1.0) if not d.method else (None, 0.0)
    if isinstance(func, ast.Attribute) and func.attr in methods and func.attr not in own:
        d = methods[func.attr]
        cls = d.name.split(".", 1)[0]
        if cls in own:
            return None, 0.0
        if isinstance(func.value, ast.Name) and func.value.id == cls:
            return None, 0.0  # Class.method(...): an unbound call, self passed by hand
        return d, 0.8
    return None, 0.0


class SignatureMismatch:
    name = "signature-mismatch"
    version = "1"
    smell = "signature_mismatch"

    def applies(self, history: Sequence[TurnView], turn: TurnView) -> bool:
        return analyse(tuple(history), turn)[0] > 0

    def score(self, history: Sequence[TurnView], turn: TurnView) -> tuple[float, Evidence]:
        found = analyse(tuple(history), turn)[1]
        if not found:
            return 0.0, Evidence((turn.index,), (), "every call binds to its definition")
        weight, d, call, message = max(found, key=lambda f: f[0])
        detail = f"{call} cannot bind to {d.name}{d.signature} (turn {d.turn}): {message}" + (
            f"; {len(found) - 1} more" if len(found) > 1 else ""
        )
        return weight, Evidence(tuple(sorted({d.turn, turn.index})), (d.line, call), detail)


DETECTOR = register(SignatureMismatch())
