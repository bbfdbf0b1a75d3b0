"""The app's own modules, by dotted name (the import rules themselves are import-linter
contracts: .importlinter, tests/house/test_imports.py)."""

from __future__ import annotations

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
