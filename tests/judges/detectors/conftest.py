from __future__ import annotations

from annotation.judges.detectors import TurnView


def conversation(*pairs: tuple[str, str]) -> list[TurnView]:
    """Turns from (user, reply) pairs, indexed from 0."""
    return [TurnView(i, user, reply) for i, (user, reply) in enumerate(pairs)]


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.strip()}\n```"
