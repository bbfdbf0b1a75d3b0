"""A split part's turns in words (the split page, the conversations page)."""

from __future__ import annotations


def turns_said(turns: list[int] | tuple[int, ...]) -> str:
    """The original's turns a part holds, in words: "turn 4", "turns 4-6", "turns 1, 3-4"."""
    runs: list[list[int]] = []
    for k in turns:
        if runs and runs[-1][1] == k - 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    said = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return f"turn {said}" if len(turns) == 1 else f"turns {said}"
