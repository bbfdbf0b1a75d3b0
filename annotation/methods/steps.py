"""One step of the methods section: a title, a short text, a table (columns and rows of plain
values) and the structured data the text and table were written from. Every output (the JSON
of `manage.py methods --format json`, Markdown, LaTeX and the report's Methods tab) renders
these; none computes a number of its own.

A cell holds a plain JSON value and its column says how to show it (render.show): `text`,
`count` (a whole number), `number` (a kappa, three decimals), `share` (a proportion as a
percentage), `ci` / `share_ci` (an interval [low, high] of numbers or of shares), `param`
(a parameter as given: 1.0, 42). None is "not recorded" or undefined; the text says which."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    name: str  # the key of the value (the JSON's columns name it)
    header: str
    kind: str = "text"  # text | count | number | share | ci | share_ci | param

    def as_dict(self) -> dict:
        return {"name": self.name, "header": self.header, "kind": self.kind}


@dataclass
class Step:
    id: str
    title: str
    text: str
    columns: Sequence[Column] = ()
    rows: list[list] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "step": self.id,
            "title": self.title,
            "text": self.text,
            "columns": [c.as_dict() for c in self.columns],
            "rows": self.rows,
            "data": self.data,
        }


# -- numbers in the text (the tables' cells are shown by render.show) --------------------------


def n(value: int) -> str:
    """A count: 81,366."""
    return f"{value:,}"


def kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def share(value: float | None) -> str:
    return "undefined" if value is None else f"{100 * value:.1f}%"


def interval(ci: Sequence[float] | None, shares: bool = False) -> str:
    if not ci:
        return "no interval"
    lo, hi = ci
    return f"[{share(lo)}, {share(hi)}]" if shares else f"[{lo:.3f}, {hi:.3f}]"


def plural(count: int, word: str, words: str = "") -> str:
    """ "1 conversation", "2 conversations" (words: an irregular plural)."""
    return f"{n(count)} {word if count == 1 else (words or word + 's')}"


def listed(items: Iterable[str], empty: str = "none") -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    if not items:
        return empty
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def short(digest: str | None) -> str | None:
    """A SHA-256 digest as quoted: its first 12 hex digits (the data keeps it whole)."""
    return digest[:12] if digest else digest


def when(iso: str | None) -> str:
    """An ISO time as "2025-01-31 14:02 UTC" (the minute)."""
    if not iso:
        return "an unrecorded time"
    return iso[:16].replace("T", " ") + " UTC"
