"""The keys of a labels form: which key toggles which type, and how keys live across
versions of a taxonomy.

Every type of a version gets a key, in the taxonomy's order (axis by axis, category by
category): the digits 1-9, then the letters a-z without the card's own keys (CARD_KEYS), 28
keys in all; 0 stays "no smell" and ? opens the guideline. A version with more types than
single keys gives up "z" as a single key: the types past the 27th get two-key sequences, z
then a single key (z1 ... z9, za ...), 55 types in all; any further type has no key and is
clicked. Keys are case-insensitive.

Across versions (TaxonomyVersion.derive): a type keeps its key for good (the version stores
it as `Type.hotkey`); a key whose type left the taxonomy (merged, split) is *retired*
(`TaxonomyVersion.retired_keys`) and never given to another type, so an annotator's habit
never picks a type they did not mean; new types take keys never used before."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from string import ascii_lowercase
from typing import Protocol

NO_SMELL_KEY = "0"
# c earlier turns, d code diff, f flag, n / p next / previous card, s skip, t tool calls
CARD_KEYS = "cdfnpst"
SINGLE_KEYS = "123456789" + "".join(ch for ch in ascii_lowercase if ch not in CARD_KEYS)
PREFIX = "z"


class Keyed(Protocol):
    code: str
    hotkey: str


def key_alphabet(n_types: int) -> list[str]:
    """The keys to hand out for a form of `n_types` types, in the order they are given."""
    if n_types <= len(SINGLE_KEYS):
        return list(SINGLE_KEYS)
    singles = [k for k in SINGLE_KEYS if k != PREFIX]
    return singles + [PREFIX + k for k in SINGLE_KEYS]


def type_keys(types: Sequence[Keyed], retired: Iterable[str] = ()) -> dict[str, str]:
    """{type code: key} for the types of one labels form ("" = no key left for it): a type's
    stored key where it has one, the free keys in order for the others, never a retired
    key."""
    alphabet = key_alphabet(len(types))
    retired = {k.lower() for k in retired}
    allowed = set(alphabet) - retired
    keys: dict[str, str] = {}
    for t in types:
        stored = (t.hotkey or "").lower()
        if stored in allowed and stored not in keys.values():
            keys[t.code] = stored
    taken = set(keys.values())
    free = iter([k for k in alphabet if k not in taken and k not in retired])
    for t in types:
        if t.code not in keys:
            keys[t.code] = next(free, "")
    return keys


def fresh_key(taken: Iterable[str], retired: Iterable[str]) -> str:
    """The first single key neither in use nor retired ("" when none is left): a new type's."""
    blocked = set(taken) | set(retired)
    return next((k for k in SINGLE_KEYS if k not in blocked), "")
