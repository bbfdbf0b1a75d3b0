"""Assigning conversations to groups: the lead's conversations page ("Assign at random", the
selected ones, a calibration set) and `manage.py assign` go through these, so the same seed
over the same conversations draws the same ones whichever door asks. Only conversations of
the study's set are ever assigned: one set aside (not drawn by a sample, split into parts,
filtered out) is never drawn, moved or shared."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from .. import conversation_keys
from ..models import Conversation, Group, Role, SeatConflict, SetAside, Study

WHY_SET_ASIDE = dict(SetAside.choices)


class AssignRefused(ValueError):
    """An assignment that cannot be made as asked; nothing was assigned."""


@dataclass
class Assigned:
    """What one assignment did: `ids` are the conversations new to at least one of
    `groups`, in the order of their ids; `message` says it as the page says it."""

    groups: list[Group]
    ids: list[int] = field(default_factory=list)
    turns: int = 0
    seed: int | None = None
    skipped: int = 0  # already had a group, and stayed in it
    set_aside: int = 0  # outside the study's set: left out
    message: str = ""

    @property
    def done(self) -> int:
        return len(self.ids)


def names(groups: list[Group]) -> str:
    return " and ".join(", ".join(g.name for g in groups).rsplit(", ", 1))


CHUNK = 2000  # ids per query: SQLite takes at most 32,766 parameters in one


def _chunks(ids: list[int]):
    for i in range(0, len(ids), CHUNK):
        yield ids[i : i + CHUNK]


def _pks(ids: list[int], narrow=lambda qs: qs) -> list[int]:
    """Those of `ids` that `narrow` keeps of their conversations, in order of id."""
    out: list[int] = []
    for chunk in _chunks(sorted(ids)):
        qs = narrow(Conversation.objects.filter(pk__in=chunk))
        out += qs.order_by("pk").values_list("pk", flat=True)
    return out


def assign_to_all(ids: list[int], groups: list[Group]) -> list[int]:
    """Assign the conversations `ids` to every group of `groups` (several: they share them,
    each running its own rounds); those new to at least one group, in order of id.
    SeatConflict when a person would sit in two groups sharing a conversation."""
    new: list[int] = []
    for chunk in _chunks(sorted(ids)):
        before = set(
            Conversation.objects.filter(pk__in=chunk, assignments__group__in=groups)
            .annotate(n=Count("assignments"))
            .filter(n=len(groups))
            .values_list("pk", flat=True)
        )
        for group in groups:
            Conversation.objects.filter(pk__in=chunk).assign(group)
        new += [pk for pk in chunk if pk not in before]
    return new


def population(study: Study, groups: list[Group], *, unassigned_only: bool = True):
    """What a random draw for `groups` draws from: the study's set, either only the
    conversations no group has yet (the page's "Assign at random"; `assign
    --exclude-assigned`) or every one that is not yet in one of `groups` (`assign`: shared
    with the groups it has)."""
    pool = Conversation.objects.filter(study=study).in_set()
    if unassigned_only:
        return pool.unassigned()
    return pool.exclude(assignments__group__in=groups)


def turns_of(ids: list[int]) -> int:
    total = 0
    for chunk in _chunks(ids):
        found = Conversation.objects.filter(pk__in=chunk).aggregate(t=Coalesce(Sum("n_turns"), 0))
        total += found["t"]
    return total


def draw(
    study: Study,
    groups: list[Group],
    n: int,
    seed: int | None = None,
    *,
    unassigned_only: bool = True,
) -> Assigned:
    """`n` conversations of the population drawn at random with `seed` (none: a random
    one, reported) and assigned to every group of `groups` (ConversationQuerySet.sample: the
    same seed over the same population draws the same conversations)."""
    pool = population(study, groups, unassigned_only=unassigned_only)
    available = pool.count()
    if n > available:
        where = "unassigned" if unassigned_only else f"in the set and not yet in {names(groups)}"
        raise AssignRefused(f"Asked for {n} conversations but only {available} are {where}.")
    if seed is None:
        seed = random.SystemRandom().randrange(1_000_000)
    chosen = list(pool.sample(n, seed).values_list("pk", flat=True))
    ids = assign_to_all(chosen, groups)
    result = Assigned(groups, ids, turns_of(ids), seed)
    result.message = (
        f"Assigned {result.done} conversations ({result.turns} turns) to {names(groups)} at "
        f"random with seed {seed}."
    )
    return result


def assign_every(study: Study, groups: list[Group], *, unassigned_only: bool = True) -> Assigned:
    """The whole population (see `population`) to every group of `groups`."""
    pool = population(study, groups, unassigned_only=unassigned_only)
    ids = assign_to_all(list(pool.values_list("pk", flat=True)), groups)
    result = Assigned(groups, ids, turns_of(ids))
    which = "that no group had" if unassigned_only else f"not yet in {names(groups)}"
    result.message = (
        f"Assigned {result.done} conversations ({result.turns} turns) to {names(groups)}: "
        f"every conversation of the study's set {which}."
    )
    return result


def _set_aside_note(n: int) -> str:
    return f" {n} set-aside conversations were left out (not in the study's set)." if n else ""


def assign_selection(groups: list[Group], selected: list[int], what: str = "selected") -> Assigned:
    """The `selected` conversations that no group has yet go to every group of `groups`;
    those with a group stay in it (taking a conversation from a group would orphan the
    labels its annotators gave), and set-aside ones are left out."""
    set_aside = len(selected) - len(_pks(selected, lambda qs: qs.in_set()))
    ids = assign_to_all(_pks(selected, lambda qs: qs.unassigned()), groups)
    result = Assigned(groups, ids, turns_of(ids), skipped=len(selected) - set_aside - len(ids))
    result.set_aside = set_aside
    result.message = f"Assigned {result.done} {what} conversations to {names(groups)}."
    if result.skipped:
        result.message += f" {result.skipped} already had a group and stayed in it."
    result.message += _set_aside_note(set_aside)
    return result


def assign_calibration(
    groups: list[Group], selected: list[int], what: str = "selected"
) -> Assigned:
    """A calibration set: the `selected` conversations of the set go to every group of
    `groups` as well as to the groups they have; no group loses a conversation."""
    in_set = _pks(selected, lambda qs: qs.in_set())
    ids = assign_to_all(in_set, groups)
    result = Assigned(groups, ids, turns_of(ids), set_aside=len(selected) - len(in_set))
    result.message = (
        f"Calibration set: {result.done} {what} conversations newly shared with "
        f"{names(groups)}." + _set_aside_note(result.set_aside)
    )
    return result


def shared_with_others(ids: list[int], groups: list[Group]) -> int:
    """How many of the conversations `ids` a group other than `groups` has too."""
    others = Group.objects.exclude(pk__in=[g.pk for g in groups])
    n = 0
    for chunk in _chunks(ids):
        shared = Conversation.objects.filter(pk__in=chunk, assignments__group__in=others)
        n += shared.distinct().count()
    return n


def find_listed(
    study: Study, listed: list[tuple[int, str]]
) -> tuple[list[int], list[tuple[int, str]]]:
    """The conversations of the study named in `listed` ((line, name) pairs: a key or an
    external id, conversation_keys.match): (their ids, the errors as (line, what is wrong)
    in order of line). A name that names no conversation, only set-aside ones, or several
    of the set (an external id may repeat, as WildChat's do: the error names their keys)
    is an error; so is a name listed twice."""
    first_line: dict[str, int] = {}
    errors: list[tuple[int, str]] = []
    for line, name in listed:
        if name in first_line:
            errors.append((line, f"{name!r} is on line {first_line[name]} too"))
        else:
            first_line[name] = line
    visible = Conversation.objects.filter(study=study).visible()
    found = conversation_keys.find(visible, first_line)
    aside: dict[int, str] = {}
    pks = sorted({n.pk for named in found.values() for n in named})
    for chunk in _chunks(pks):
        aside.update(visible.filter(pk__in=chunk).values_list("pk", "set_aside"))
    ids = []
    for name, line in first_line.items():
        named = found[name]
        in_set = [n for n in named if aside[n.pk] == SetAside.NO]
        if not named:
            errors.append((line, f"no conversation {name!r} in study {study.slug}"))
        elif not in_set:
            why = WHY_SET_ASIDE.get(aside[named[0].pk], aside[named[0].pk])
            errors.append((line, f"conversation {name!r} is set aside ({why}), not in the set"))
        elif len(in_set) > 1:
            errors.append((line, conversation_keys.ambiguous(name, in_set)))
        else:
            ids.append(in_set[0].pk)
    return ids, sorted(errors)


HOW = ("count", "selection", "calibration")


def assign_as_asked(
    user,
    study: Study,
    groups: list[Group],
    how: str,
    *,
    count: int | None = 0,
    seed: int | None = None,
    conversations: list[int] | None = None,
) -> Assigned:
    """The lead's assignment from the conversations page, in one transaction: `count`
    conversations drawn at random with `seed` ("count"), the `conversations` selected as a
    calibration set shared with every group ("calibration"), or the selected ones that no
    group has yet ("selection"). AssignRefused, nothing assigned, for a user who does not lead
    the study, an unknown `how`, a draw larger than the population, or a person who would sit
    in two groups sharing a conversation (SeatConflict, said the same way)."""
    if study.role_of(user) != Role.LEAD:
        raise AssignRefused("Nothing assigned: only the study's leads assign conversations.")
    if how not in HOW:
        raise AssignRefused(f"Nothing assigned: unknown way {how!r} (one of {', '.join(HOW)}).")
    ids = list(conversations or [])
    try:
        with transaction.atomic():
            if how == "count":
                return draw(study, groups, count, seed)
            if how == "calibration":
                return assign_calibration(groups, ids)
            return assign_selection(groups, ids)
    except SeatConflict as e:
        raise AssignRefused(f"Nothing assigned: {e}.") from None
