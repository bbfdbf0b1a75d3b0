"""The annotator's card, composed: each feature that adds to the card offers its context
through one small interface, a provider `provide(card: Card) -> dict`, and the card view
walks them (views/shared/card.py) without importing any feature.

A provider is named here by its dotted path (PROVIDERS, loaded once, in order: a later
provider's keys win), or added at run time with `register`. A new unit or feature plugs in
by adding its provider: the split check (what its card shows beside the turn), the keys
that changed since the user's last card, the labels form's ticks (the stored labels, or the
input sent back, plus the types suggested by decided proposals: pre-ticked, not stored), the
evidence box, the put-off (skip, flag) state, the card's position and neighbours, and the
open sort's tag panel.

A provider sees only what the card's viewer may see: it is handed the acting user, and it
reads that user's own labels (`mine`), never another annotator's (access.py's rules hold
for whatever it queries)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

PROVIDERS: tuple[str, ...] = (
    "annotation.intake.splitcheck.card_provider",
    "annotation.hotkeys.card_provider",
    "annotation.card.labels.ticks",
    "annotation.evidence.card_provider",
    "annotation.card.labels.put_off",
    "annotation.position.card_provider",
    "annotation.opensort.card.card_provider",
)


@dataclass(frozen=True)
class Card:
    """What a provider is handed: the card (`turn`) as `user` sees it in `group` (None when
    the caller does not know it), the study's `types`, the user's own current round-1 label
    (`mine`), the labels `form` sent back to be corrected (None: the stored labels are
    shown), whether the labels form is `locked`, and the open sort's posted tags sent back
    (`tags_posted`)."""

    study: Any
    user: Any
    turn: Any
    types: list
    group: Any = None
    mine: Any = None
    form: Any = None
    locked: bool = False
    tags_posted: Any = None


Provider = Callable[[Card], dict]

_registered: list[Provider] = []
_loaded: list[Provider] | None = None


def register(provider: Provider) -> Provider:
    """Add a provider after those of PROVIDERS (usable as a decorator)."""
    _registered.append(provider)
    return provider


def unregister(provider: Provider) -> None:
    _registered.remove(provider)


def providers() -> list[Provider]:
    global _loaded
    if _loaded is None:
        _loaded = [import_string(path) for path in PROVIDERS]
    return [*_loaded, *_registered]


def provide(card: Card, walk: Iterable[Provider] | None = None) -> dict:
    """The card's context from every provider, in order."""
    out: dict = {}
    for provider in providers() if walk is None else walk:
        out.update(provider(card))
    return out
