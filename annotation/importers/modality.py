"""Where a coding session happened: in an IDE (`ide`) or a command-line agent (`cli`), and the
tool's name, recorded in conversation metadata (`modality`, `tool`) so figures can be split
by it (`agreement SLUG --by modality`). An importer records it where the log tells it
(FORMATS.md section 4: SpecStory's provider; Claude Code and Codex are CLIs; SWE-chat's
`source`); the lead can set it for a whole import (`import_conversations --modality`), which
wins over what the log says."""

from __future__ import annotations

IDE, CLI = "ide", "cli"
MODALITIES = (IDE, CLI)
MODALITY_KEY, TOOL_KEY = "modality", "tool"

# tool names as logs spell them (lower case, spaces and dashes as one): IDEs, then CLIs
_IDE_TOOLS = ("cursor", "vs code", "vscode", "visual studio code", "copilot", "windsurf",
              "jetbrains", "intellij", "zed", "cline", "roo code", "kiro")  # fmt: skip
_CLI_TOOLS = ("claude code", "codex", "gemini cli", "aider", "opencode", "amp", "goose",
              "cursor cli", "cursor agent", "copilot cli", "droid")  # fmt: skip


def of_tool(name: str | None) -> str | None:
    """The modality a tool's name tells (`Cursor IDE` -> ide, `Claude Code` -> cli), or None
    when the name does not tell it."""
    if not isinstance(name, str) or not name.strip():
        return None
    words = " ".join(name.lower().replace("-", " ").replace("_", " ").split())
    if words.endswith(" ide") or words == "ide":
        return IDE
    if words.endswith(" cli") or words == "cli":
        return CLI
    # the longest known name that starts the tool's name decides (`cursor cli` before `cursor`)
    known = [(t, CLI) for t in _CLI_TOOLS] + [(t, IDE) for t in _IDE_TOOLS]
    hits = [(len(t), m) for t, m in known if words == t or words.startswith(t + " ")]
    return max(hits)[1] if hits else None


def record(metadata: dict, tool: str | None, modality: str | None = None) -> None:
    """Record the tool and its modality (given, or told by the tool's name) in `metadata`;
    nothing for a modality the name does not tell."""
    if tool:
        metadata[TOOL_KEY] = tool
    modality = modality or of_tool(tool)
    if modality in MODALITIES:
        metadata[MODALITY_KEY] = modality


def check(modality: str | None) -> str | None:
    """A modality given by the lead: `ide` or `cli` (any case), else ValueError naming it."""
    if modality in (None, ""):
        return None
    value = str(modality).strip().lower()
    if value not in MODALITIES:
        raise ValueError(f"modality {modality!r}: give ide or cli")
    return value


def overrides(modality: str | None, tool: str | None) -> dict:
    """The metadata a whole import sets over what its logs say: {} when nothing is given."""
    given = {}
    if tool:
        given[TOOL_KEY] = str(tool).strip()
    if checked := check(modality):
        given[MODALITY_KEY] = checked
    return given
