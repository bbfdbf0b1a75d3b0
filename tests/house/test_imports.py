"""The house's import rules (issue 8): taxonomy/ is a leaf that knows nothing of studies or
annotations, and no two modules of the apps import each other, not even lazily inside a
function (a lazy import hides a cycle; it does not remove it)."""

from __future__ import annotations

from .imports import cycles, graph, module_files


def test_the_import_graph_is_read_from_every_app_module():
    files = module_files()
    edges = graph()
    # the reader sees relative, absolute and function-level imports
    assert "annotation.models" in edges["annotation.access"]
    assert "annotation.importers.records" in edges["annotation.importers.annotations"]
    assert "taxonomy.models" in edges["annotation.models"]
    assert {"annotation.models", "taxonomy.models", "config.settings"} <= set(files)


def test_taxonomy_imports_nothing_from_annotation():
    edges = graph()
    leaks = {
        module: sorted(t for t in targets if t.split(".")[0] == "annotation")
        for module, targets in edges.items()
        if module.split(".")[0] == "taxonomy"
    }
    assert {m: t for m, t in leaks.items() if t} == {}


def test_no_two_modules_import_each_other():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
