"""The docs cannot silently drift from the code: every management command of the app has its
section on the command-line page, with every option it declares, and every environment
variable config/settings.py reads is named on the configuration page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.core.management import load_command_class
from django.core.management.base import BaseCommand

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ROOT / "annotation" / "management" / "commands"
CLI = ROOT / "docs" / "cli.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
SETTINGS = ROOT / "config" / "settings.py"
# the helpers settings.py reads the environment through: env_bool(NAME, ...), env_int(NAME, ...)
ENV_HELPERS = {"env_bool", "env_int"}


def command_names() -> list[str]:
    return sorted(p.stem for p in COMMANDS.glob("*.py") if p.stem != "__init__")


def long_options(command: BaseCommand, name: str) -> set[str]:
    parser = command.create_parser("manage.py", name)
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def command_options(name: str) -> set[str]:
    """The long options the command itself declares (not Django's common ones)."""
    return long_options(load_command_class("annotation", name), name) - long_options(
        BaseCommand(), name
    )


def env_vars_read(source: str) -> set[str]:
    """Every NAME in os.environ.get(NAME...), os.getenv(NAME...), os.environ[NAME],
    os.environ.setdefault(NAME...) and the env_* helpers' calls, NAME a string literal; and
    dj_database_url.config()'s variable (DATABASE_URL unless its env= says another)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            dotted = ast.unparse(node.func)
            reads = dotted in {"os.environ.get", "os.getenv", "os.environ.setdefault"}
            first = node.args[0] if node.args else None
            if (reads or dotted in ENV_HELPERS) and isinstance(first, ast.Constant):
                names.add(first.value)
            if dotted == "dj_database_url.config":
                env = [k.value.value for k in node.keywords if k.arg == "env"]
                names.add(env[0] if env else "DATABASE_URL")
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            if isinstance(node.slice, ast.Constant):
                names.add(node.slice.value)
    return names


def test_every_command_has_its_section_on_the_command_line_page():
    headings = set(re.findall(r"^### (\w+)$", CLI.read_text(encoding="utf-8"), re.M))
    missing = [name for name in command_names() if name not in headings]
    assert command_names() and missing == [], f"docs/cli.md has no section for {missing}"


def test_every_option_of_every_command_is_on_its_section():
    text = CLI.read_text(encoding="utf-8")
    missing = {}
    for name in command_names():
        section = re.search(rf"^### {name}\n(.*?)(?=^##)", text, re.M | re.S)
        assert section, name
        absent = sorted(o for o in command_options(name) if f"`{o}" not in section[1])
        if absent:
            missing[name] = absent
    assert missing == {}, f"options missing from docs/cli.md: {missing}"


def test_every_environment_variable_of_the_settings_is_on_the_configuration_page():
    read = env_vars_read(SETTINGS.read_text(encoding="utf-8"))
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", CONFIGURATION.read_text(encoding="utf-8")))
    assert {"DATABASE_URL", "SECRET_KEY", "CARDSORT_LLM_RPM"} <= read  # the reading is read
    assert sorted(read - documented) == [], "docs/configuration.md does not name these"


def test_the_reader_finds_each_way_of_reading_the_environment():
    source = (
        "import os\n"
        "a = os.environ.get('A', 1)\n"
        "b = env_int(\n    'B', 2)\n"
        "c = env_bool('C')\n"
        "d = os.environ['D']\n"
        "e = os.getenv('E')\n"
        "f = dj_database_url.config(default='sqlite://')\n"
        "def env_int(name, default):\n    return int(os.environ.get(name, default))\n"
    )
    assert env_vars_read(source) == {"A", "B", "C", "D", "E", "DATABASE_URL"}
