"""The house's import rules (issue 8, issue 23) are import-linter contracts in .importlinter:
the pages and the API never import each other, taxonomy/ is a leaf, the engines never import
the doors, the units are independent, no page module imports another and no two sibling
modules import each other (the models package is one node), not even lazily inside a function
(a lazy import hides a cycle; it does not remove it). `make lint` runs them; this test makes
`make test` fail on a broken contract too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lint_imports(config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "lint-imports is not installed (requirements-dev.txt: import-linter)"
    return subprocess.run(
        [exe, str(config), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_are_kept():
    run = lint_imports(ROOT / ".importlinter")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


@pytest.fixture
def broken_tree(tmp_path, monkeypatch):
    """A copy of the contracts whose `doors` contract a new import would break: the API
    allowed nothing of annotation.models either (it imports it everywhere)."""
    text = (ROOT / ".importlinter").read_text(encoding="utf-8")
    text = text.replace(
        "modules =\n    annotation.views\n    annotation.api\n",
        "modules =\n    annotation.views\n    annotation.api\n    annotation.models\n",
        1,
    )
    config = tmp_path / "contracts.ini"
    config.write_text(text, encoding="utf-8")
    return config


def test_a_broken_contract_fails_the_run(broken_tree):
    run = lint_imports(broken_tree)
    assert run.returncode != 0
    assert "annotation.api is not allowed to import annotation.models" in run.stdout


def test_the_cycle_contract_finds_a_lazy_import_cycle(tmp_path):
    """The `no-cycles` contract's kind (acyclic_siblings) on a package of three modules whose
    cycle closes inside a function: a lazy import hides a cycle, it does not remove it."""
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from . import c\n")
    (package / "c.py").write_text("def later():\n    from . import a\n")
    text = (ROOT / ".importlinter").read_text(encoding="utf-8")
    cycles = text[text.index("[importlinter:contract:no-cycles]") :].split("\n\n")[0]
    cycles = cycles.replace("    annotation\n    taxonomy\n    config\n", "    cyclic\n")
    cycles = cycles.replace("skip_descendants =\n    annotation.models", "")
    config = tmp_path / "contracts.ini"
    config.write_text(f"[importlinter]\nroot_packages =\n    cyclic\n\n{cycles}\n")
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    run = subprocess.run(
        [exe, str(config), "--no-cache"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode != 0, run.stdout
    assert "No cycles are allowed in cyclic" in run.stdout
    assert "- .c -> .a (1 import)" in run.stdout
