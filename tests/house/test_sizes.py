"""Rooms a newcomer can read (issue 8): no app module over 500 lines but the models and the
pure statistics, and no view function over 50 lines."""

from __future__ import annotations

import ast

from .imports import module_files

MAX_MODULE_LINES = 500
# the two rooms that are long on purpose: the domain in one place, the statistics in one
LONG_ON_PURPOSE = {"annotation.models", "annotation.agreement.stats"}
MAX_VIEW_LINES = 50


def test_no_app_module_is_over_500_lines():
    long = {
        name: n
        for name, path in module_files().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert {name: n for name, n in long.items() if name not in LONG_ON_PURPOSE} == {}


def test_no_view_function_is_over_50_lines():
    long = {}
    for name, path in module_files().items():
        if not name.startswith(("annotation.views.", "annotation.api.")):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                if node.end_lineno - start + 1 > MAX_VIEW_LINES:
                    long[f"{name}.{node.name}"] = node.end_lineno - start + 1
    assert long == {}
