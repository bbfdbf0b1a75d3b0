"""While files are read the cyclic garbage collector runs less often (its full collections
cost 15% of the reading side's CPU, benchmarks/import_bench.py); before and after, and when
the import fails, the process has its own thresholds back."""

from __future__ import annotations

import gc
import json

import pytest

from annotation import importers
from annotation.importers import import_files
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def native(i: int) -> dict:
    messages = [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]
    return {"id": f"c{i}", "messages": messages}


def test_the_thresholds_are_raised_while_reading_and_restored_after(tmp_path, thresholds):
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(native(i)) + "\n" for i in range(3)), encoding="utf-8")
    during = []
    report = import_files(
        make_study(), [path], progress=lambda *_: during.append(gc.get_threshold())
    )
    assert report.conversations == 3
    # each batch's progress is reported while reading; the last report, once all is done
    assert during[:-1] and set(during[:-1]) == {importers.GC_THRESHOLDS}
    assert during[-1] == (700, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_failed_import_restores_them_too(tmp_path, thresholds, monkeypatch):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(native(1)) + "\n", encoding="utf-8")

    def broken(*args, **kwargs):
        assert gc.get_threshold() == importers.GC_THRESHOLDS
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(importers, "_file_items", broken)
    with pytest.raises(RuntimeError, match="the disk went away"):
        import_files(make_study(), [path])
    assert gc.get_threshold() == (700, 10, 10)
