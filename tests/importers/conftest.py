"""Helpers for the importer tests: small fixture files written under tmp_path."""

from __future__ import annotations

import gzip
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

    def parquet(self, name: str, records: list[dict]) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.root / name
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=max(len(records), 1))
        return path

    def gzip(self, name: str, source: Path) -> Path:
        """`source` gzip-compressed, under `name` (the name need not end in .gz)."""
        path = self.root / name
        path.write_bytes(gzip.compress(source.read_bytes()))
        return path


def stored(study) -> list[tuple]:
    """The study's conversations as comparable tuples, in id order."""
    from annotation.models import Conversation

    result = []
    for c in Conversation.objects.filter(study=study).order_by("pk").prefetch_related("turns"):
        turns = [
            (t.index, t.user_text, t.reply_text, t.reply_parts, t.reply_missing, t.metadata)
            for t in sorted(c.turns.all(), key=lambda t: t.index)
        ]
        result.append((c.external_id, c.source_format, c.system_prompt, c.metadata, turns))
    return result


@pytest.fixture
def files(tmp_path) -> Files:
    return Files(tmp_path)
