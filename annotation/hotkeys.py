"""The keyboard of a labels form: each type with its key (taxonomy/keys.py holds the rules:
the alphabet, a type's key for good across versions, retired keys never given again)."""

from __future__ import annotations

from collections.abc import Sequence

from taxonomy.keys import CARD_KEYS, NO_SMELL_KEY, PREFIX, SINGLE_KEYS, key_alphabet, type_keys
from taxonomy.models import TaxonomyVersion, Type

from .models import Membership, Study

__all__ = [
    "CARD_KEYS",
    "NO_SMELL_KEY",
    "PREFIX",
    "SINGLE_KEYS",
    "key_alphabet",
    "key_changes",
    "type_keys",
    "with_keys",
]


def with_keys(types: Sequence[Type]) -> Sequence[Type]:
    """The same types, each with `.key` (what its <kbd> shows and its box answers to). The
    types of one version (type_list() gives each its axis's version, whose retired keys are
    never handed out)."""
    retired = types[0].axis.version.retired_keys if types else ""
    keys = type_keys(types, retired)
    for t in types:
        t.key = keys[t.code]
    return types


def _by_key(types: Sequence[Type], retired: str) -> dict[str, Type]:
    keys = type_keys(types, retired)
    return {keys[t.code]: t for t in types if keys[t.code]}


def key_changes(study: Study, user, types: Sequence[Type]) -> list[str]:
    """What a member's keys do differently since the last card they saw, under an older
    taxonomy version ([] on their first card, or when nothing changed), in key order; the
    study's version is then recorded as seen. One query a card; three more once a version."""
    version = study.taxonomy_version
    row = Membership.objects.filter(study=study, user=user).values_list("pk", "keys_seen_id")
    row = row.first()
    if row is None or row[1] == version.pk:
        return []
    Membership.objects.filter(pk=row[0]).update(keys_seen=version)
    old = TaxonomyVersion.objects.filter(pk=row[1]).first() if row[1] else None
    if old is None:
        return []
    before = _by_key(old.type_list(), old.retired_keys)
    after = _by_key(types, version.retired_keys)
    order = {k: i for i, k in enumerate(key_alphabet(max(len(types), len(before))))}
    out = []
    for key in sorted(before.keys() | after.keys(), key=lambda k: order.get(k, len(order))):
        was, now = before.get(key), after.get(key)
        if now is None:
            out.append(f"{key}: no longer {was.name} (that type left the taxonomy)")
        elif was is None:
            out.append(f"{key}: {now.name} (new)")
        elif was.code != now.code:
            out.append(f"{key}: now {now.name}, no longer {was.name}")
        elif was.name != now.name:
            out.append(f"{key}: {was.name} is now called {now.name}")
    return out


def card_provider(card) -> dict:
    """The card page's provider (annotation/card): the keys changed since the user's last
    card."""
    return {"key_changes": key_changes(card.study, card.user, card.types)}
