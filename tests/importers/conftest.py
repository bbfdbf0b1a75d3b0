"""Helpers for the importer tests: small fixture files written under tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


class Files:
    def __init__(self, root: Path) -> None:
        self.root = root

    def jsonl(self, name: str, *lines) -> Path:
        """Dicts become JSON lines; strings are written as given (bad or blank lines)."""
        path = self.root / name
        text = "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)
        path.write_text(text, encoding="utf-8")
        return path

    def raw(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return path

    def json(self, name: str, value) -> Path:
        path = self.root / name
        path.write_text(json.dumps(value, indent=1), encoding="utf-8")
        return path


@pytest.fixture
def files(tmp_path) -> Files:
    return Files(tmp_path)
