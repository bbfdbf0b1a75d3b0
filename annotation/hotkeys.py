"""The keyboard of a labels form: which key toggles which type.

Every type of the taxonomy version gets a key, in the taxonomy's order (axis by axis,
category by category): the digits 1-9, then the letters a-z without the card's own keys
(CARD_KEYS), 28 keys in all; 0 stays "no smell" and ? opens the guideline. A type keeps the
key its taxonomy stores (`Type.hotkey`, e.g. the presets' 1-9), so adding a type never
moves the keys people have learnt; types without one take the free keys in order. A
version with more types than single keys gives up "z" as a single key: the types past the
27th get two-key sequences, z then a single key (z1 ... z9, za ...), 55 types in all; any
further type has no key and is clicked. Keys are case-insensitive (Caps Lock does not
matter)."""

from __future__ import annotations

from collections.abc import Sequence
from string import ascii_lowercase

from taxonomy.models import Type

NO_SMELL_KEY = "0"
# c earlier turns, d code diff, f flag, n / p next / previous card, s skip, t tool calls
CARD_KEYS = "cdfnpst"
SINGLE_KEYS = "123456789" + "".join(ch for ch in ascii_lowercase if ch not in CARD_KEYS)
PREFIX = "z"


def key_alphabet(n_types: int) -> list[str]:
    """The keys to hand out for a form of `n_types` types, in the order they are given."""
    if n_types <= len(SINGLE_KEYS):
        return list(SINGLE_KEYS)
    singles = [k for k in SINGLE_KEYS if k != PREFIX]
    return singles + [PREFIX + k for k in SINGLE_KEYS]


def type_keys(types: Sequence[Type]) -> dict[str, str]:
    """{type code: key} for the types of one labels form ("" = no key left for it)."""
    alphabet = key_alphabet(len(types))
    allowed = set(alphabet)
    keys: dict[str, str] = {}
    for t in types:
        stored = (t.hotkey or "").lower()
        if stored in allowed and stored not in keys.values():
            keys[t.code] = stored
    free = iter([k for k in alphabet if k not in set(keys.values())])
    for t in types:
        if t.code not in keys:
            keys[t.code] = next(free, "")
    return keys


def with_keys(types: Sequence[Type]) -> Sequence[Type]:
    """The same types, each with `.key` (what its <kbd> shows and its box answers to)."""
    keys = type_keys(types)
    for t in types:
        t.key = keys[t.code]
    return types
