"""The detectors' one interface (issue 22 point 4): plain data in, a score and its evidence
out. No ORM, no Django: a judge run (annotation/judges/) turns a conversation's turns into
TurnViews, asks `detect`, and writes what comes back.

A detector sees a turn with the conversation's earlier turns (`history`, oldest first):
`applies` says whether it can judge that turn at all (a turn it does not apply to gets no
label), `score` gives its confidence in [0, 1] that the turn shows the smell, with the
turns and quotes it rests on, so a threshold can be chosen later on a development split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class TurnView:
    """What a detector sees of a turn."""

    index: int  # 0-based position in the conversation
    user: str  # the user's message text
    reply: str  # the assistant's reply text (prose and code as stored)


@dataclass(frozen=True)
class Evidence:
    turns: tuple[int, ...]  # turn indexes the finding rests on
    quotes: tuple[str, ...]  # short excerpts (a changed line, the ban sentence ...)
    detail: str = ""  # e.g. the unified diff, the failing binding message


@runtime_checkable
class Detector(Protocol):
    name: str  # "code-rollback"
    version: str  # "1"
    smell: str  # the preset type code it detects (TAXONOMY.md: "code_rollback")

    def applies(self, history: Sequence[TurnView], turn: TurnView) -> bool: ...

    def score(self, history: Sequence[TurnView], turn: TurnView) -> tuple[float, Evidence]: ...


REGISTRY: dict[str, Detector] = {}


def register(detector: Detector) -> Detector:
    """Adds a detector to REGISTRY under its name (one version per name at a time: a new
    version replaces the module's code, and its labels are written by another pseudo-user)."""
    if detector.name in REGISTRY and REGISTRY[detector.name] is not detector:
        raise ValueError(f"two detectors are named {detector.name!r}")
    REGISTRY[detector.name] = detector
    return detector


def get(name: str) -> Detector:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise KeyError(f"no detector named {name!r}; known: {known}") from None


def detect(detector: Detector, turns: Sequence[TurnView]) -> list[tuple[int, float, Evidence]]:
    """The detector over a conversation (turns in order): for each turn it applies to, the
    turn's index, its score clamped to [0, 1], and the evidence."""
    turns = list(turns)
    found = []
    for position, turn in enumerate(turns):
        history = turns[:position]
        if not detector.applies(history, turn):
            continue
        score, evidence = detector.score(history, turn)
        found.append((turn.index, min(1.0, max(0.0, float(score))), evidence))
    return found
