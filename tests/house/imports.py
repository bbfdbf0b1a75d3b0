"""The import graph of the app's own modules, read from the source (ast): every import
statement, at module level or inside a function, resolved to the modules it names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("annotation", "taxonomy", "config")


def module_files() -> dict[str, Path]:
    """{dotted module name: file} of the apps, migrations aside."""
    out = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The app modules `name` imports (any level of the file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from package import module` names a module; `from module import name` not
            targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


# One node however many files: the models of one Django app reference each other (a card's
# state makes its consensus, a conversation counts its labels), as they did in one module.
ONE_NODE = ("annotation.models",)


def node(name: str) -> str:
    for whole in ONE_NODE:
        if name.startswith(whole + "."):
            return whole
    return name


def graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = {node(t) for t in imports_of(name, path, known)}
        edges.setdefault(node(name), set()).update(targets - {node(name)})
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out
