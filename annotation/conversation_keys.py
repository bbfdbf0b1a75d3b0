"""A conversation's key: its public name in the study (issue 20, defect 1).

A dataset's own id does not tell conversations apart: WildChat's conversation_hash repeats,
so two conversations of a study may share an external id. Every conversation also gets a
key, unique in its study, stored and indexed (Conversation.key): the external id itself for
the first conversation with it, `<id>~2`, `<id>~3`, ... for the later ones, in the order
they are written (an import: file, then line). A key that would be taken already (an id
that is spelled like a key, `x~2`) is skipped for the next free one, and no key ends in
`~1` (an id that does, `x~1`, starts at `x~1~2`): that spelling is kept for the rule
below. A key never changes:
importing more only adds keys. The pages show the key, the exports write it
(`conversation_key`) and the API returns it.

Whatever takes a conversation by name from a user (assign --ids, import_tags,
import_annotations, the API's filters) takes a key or a plain external id (match):
- a key the tool made (one that is not its conversation's external id) names that
  conversation;
- otherwise the name is an external id: one conversation with it is found, several are
  ambiguous, an error naming their keys (`ambiguous`);
- the first conversation of a repeated id has the plain id as its key, which is ambiguous:
  `<id>~1` names it.
So every conversation has a name that finds it alone: its key, or `<key>~1`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Q

SEPARATOR = "~"
FIRST = SEPARATOR + "1"
# the key column holds the longest external id and a suffix
MAX_LENGTH = 255 + 15
# ids looked up a query at a time (well under SQLite's limit of bound parameters)
CHUNK = 500
# what ends a key and tells it apart: suffixes of repeated ids and part numbers
_TAIL = re.compile(r"(?:[~#][0-9]+)+$")


def suffixed(external_id: str, n: int) -> str:
    """The key of the `n`-th conversation with `external_id` (n >= 2)."""
    return f"{external_id}{SEPARATOR}{n}"


def give_keys(rows, conversations: Sequence) -> None:
    """Give each of `conversations` (objects with `external_id` and `key`, in the order
    they are written; one with a key already keeps it) the next free key among `rows` (a
    queryset of every conversation of their study). Two queries a CHUNK of ids, and again
    only for a key found taken."""
    todo = [c for c in conversations if not c.key]
    if not todo:
        return
    ids = sorted({c.external_id for c in todo})
    counts: Counter = Counter()
    for chunk in _chunks(ids):
        for external_id in rows.filter(external_id__in=chunk).values_list("external_id", flat=True):
            counts[external_id] += 1
    number: dict[int, int] = {}  # position in todo -> the suffix its key has (1: none)
    for i, c in enumerate(todo):
        counts[c.external_id] += 1
        number[i] = counts[c.external_id]
        if number[i] == 1 and c.external_id.endswith(FIRST):
            number[i] = 2  # `<id>~1` names the first of a repeated id: never a key
        c.key = c.external_id if number[i] == 1 else suffixed(c.external_id, number[i])
    given: set[str] = set()
    unchecked = list(range(len(todo)))
    while unchecked:
        wanted = sorted({todo[i].key for i in unchecked})
        taken = set()
        for chunk in _chunks(wanted):
            taken.update(rows.filter(key__in=chunk).values_list("key", flat=True))
        clashed = []
        for i in unchecked:
            if todo[i].key in taken or todo[i].key in given:
                number[i] += 1
                todo[i].key = suffixed(todo[i].external_id, number[i])
                clashed.append(i)
            else:
                given.add(todo[i].key)
        unchecked = clashed


def shortened(key: str, limit: int) -> str:
    """`key` in at most `limit` characters, for a title or a list: cut in the middle, so
    that what tells it apart (the suffix `~2`, a part's `#1`) stays."""
    if len(key) <= limit:
        return key
    tail = _TAIL.search(key)
    end = tail.group(0)[-(limit // 2) :] if tail else ""
    return key[: max(limit - len(end) - 1, 1)] + "…" + end


@dataclass(frozen=True)
class Named:
    """A conversation a name found: its id, key and external id."""

    pk: int
    key: str
    external_id: str = ""


def lookup_names(names: Iterable[str]) -> set[str]:
    """What to look up (as key or external id) to match `names`: them, and for `x~1` x."""
    wanted = set(names)
    return wanted | {n[: -len(FIRST)] for n in wanted if n.endswith(FIRST)}


def match(names: Iterable[str], rows: Iterable[tuple[int, str, str]]) -> dict[str, list[Named]]:
    """What each of `names` names among `rows` ((pk, external_id, key) of the study's
    conversations with a key or external id in lookup_names(names), more do no harm): []
    none, one conversation, or several (an ambiguous plain id), in the order of their ids."""
    by_key: dict[str, tuple[int, str, str]] = {}
    by_id: dict[str, list[tuple[int, str, str]]] = {}
    for row in sorted(rows):
        by_key[row[2]] = row
        by_id.setdefault(row[1], []).append(row)
    found = {}
    for name in names:
        hit = by_key.get(name)
        first = by_key.get(name[: -len(FIRST)]) if name.endswith(FIRST) else None
        if first is not None and first[1] != first[2]:
            first = None  # `x~1` names the conversation whose key is the plain id x
        if hit is not None and hit[1] != name:  # a key made for a repeated id
            found[name] = [Named(hit[0], hit[2], hit[1])]
        elif first is not None and len(by_id[first[1]]) > 1:  # the first of a repeated id
            found[name] = [Named(first[0], first[2], first[1])]
        elif name in by_id:
            found[name] = [Named(pk, key, e) for pk, e, key in by_id[name]]
        elif first is not None:
            found[name] = [Named(first[0], first[2], first[1])]
        else:
            found[name] = []
    return found


def match_keys(keys: Iterable[str], rows: Iterable[tuple[int, str, str]]) -> dict[str, Named]:
    """The conversation of each of `keys` that is one (exactly) among `rows`."""
    wanted = set(keys)
    return {key: Named(pk, key, e) for pk, e, key in rows if key in wanted}


def one(
    name,
    key,
    by_name: dict[str, list[Named]],
    by_key: dict[str, Named],
    unknown: str = "no conversation {!r}",
) -> Named:
    """The conversation a record names by `name` (its "conversation": a key or a plain
    external id) and/or `key` (its "conversation_key": a key exactly), from what match and
    match_keys found for them; ValueError naming the field and why when it names none
    (`unknown`, formatted with the name), several, or the two disagree. None is a field
    the record does not have."""
    if key is not None:
        if not isinstance(key, str) or not key:
            raise ValueError(f"conversation_key: a key (a string), got {key!r}")
        found = by_key.get(key)
        if found is None:
            raise ValueError(f"conversation_key: no conversation with the key {key!r}")
        if name is not None and name not in (found.key, found.external_id):
            raise ValueError(
                f"conversation: {name!r} is not the conversation with the key {key!r} "
                f"(its external id is {found.external_id!r})"
            )
        return found
    named = by_name.get(name, []) if isinstance(name, str) else []
    if not named:
        raise ValueError(f"conversation: {unknown.format(name)}")
    if len(named) > 1:
        raise ValueError(f"conversation: {ambiguous(name, named)}")
    return named[0]


def rows_for(conversations, names: Iterable[str], keys: Iterable[str] = ()) -> set[tuple]:
    """The rows match and match_keys need for `names` and `keys`, from a queryset of
    conversations (one study's, visible or in the set as the caller needs)."""
    wanted = sorted(lookup_names(names) | set(keys))
    rows = set()
    for chunk in _chunks(wanted):
        rows.update(
            conversations.filter(Q(key__in=chunk) | Q(external_id__in=chunk)).values_list(
                "pk", "external_id", "key"
            )
        )
    return rows


def find(conversations, names: Iterable[str]) -> dict[str, list[Named]]:
    """match over a queryset of conversations (rows_for)."""
    names = list(dict.fromkeys(names))
    return match(names, rows_for(conversations, names))


def ambiguous(name: str, found: list[Named]) -> str:
    """Why `name` names no one conversation of `found` (two or more), naming their keys."""
    keys = [f"{n.key}{FIRST} (key {n.key})" if n.key == name else n.key for n in found]
    listed = ", ".join(keys[:-1]) + f" or {keys[-1]}"
    return (
        f"id {name!r} is ambiguous: {len(found)} conversations have it (the dataset repeats "
        f"it); name one by its key: {listed}"
    )


def _chunks(values: list) -> Iterable[list]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]
