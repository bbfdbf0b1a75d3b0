"""Free tags on cards in the open sort (issue 11, point 1).

While a study or a group open-sorts (Group.open_sorting), each annotator tags its cards with
free tags of their own: several per card, or none ("no smell"), and a note. A tag belongs to
its author: they reuse it on other cards (the autocomplete offers their own tags, never
anyone else's), and nobody sees another's tags on a card (round 1 stays blind). A tag set
can be changed until the freeze; there are no per-card rounds in an open sort.

Also here: the lead's switch of a study or a group into and out of the open sort, refused
once it would strand what the annotators have already given (closed-sort labels going in,
tag sets going out)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Case, Exists, IntegerField, OuterRef, QuerySet, Value, When
from django.utils import timezone

from ..models import Annotation, BoardVisit, FreeTag, Group, Phase, Study, TagSet, Turn
from .reading import frozen_event

MAX_NAME = FreeTag._meta.get_field("name").max_length  # 100
MAX_DESCRIPTION = FreeTag._meta.get_field("description").max_length  # 500
MAX_NOTE = 10_000
SUGGESTIONS = 10  # how many of one's own tags the autocomplete offers at once


class TagRefused(ValueError):
    """A tag set that cannot be saved as given; `field` names the input at fault (tag,
    description, note, no_smell), the message says what and where. Nothing was saved.
    `status`: the HTTP status a page answers it with (bad input; 409: the board moved on)."""

    status = 422

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class NotOpenSorting(TagRefused):
    """Tags for a card whose group is not (or no longer) in the open sort."""

    def __init__(self, group: Group):
        super().__init__(
            "tag",
            f"Group {group.name} is not in the open sort (any more): its cards take types "
            "from the taxonomy, not free tags.",
        )


class TagsLocked(TagRefused):
    """Tags of someone who has seen the board (BoardVisit): locked since."""

    def __init__(self, visit):
        super().__init__(
            "tag",
            f"Your tags are locked: you opened the consolidation board on "
            f"{visit.first_at:%Y-%m-%d %H:%M} UTC, and it shows the others' tags. What you "
            "gave before stays your own judgment (it becomes your round-1 labels at the "
            "freeze).",
        )


class BoardWasFrozen(TagRefused):
    """Tags that arrive after the freeze (the card's page was drawn before it): the open sort
    is over, and the tag sets the freeze found are the round-1 labels."""

    status = 409

    def __init__(self, event):
        super().__init__(
            "tag",
            f"The board was frozen at {event.created_at:%Y-%m-%d %H:%M} UTC, your tag was not "
            "saved: the open sort is over, and the tag sets given before the freeze became "
            "round-1 labels. Reload the card.",
        )


def lock_of(study: Study, user):
    """The visit that locks `user`'s tag sets in `study` (None: not locked)."""
    return BoardVisit.objects.filter(study=study, user=user).first()


class PhaseRefused(Exception):
    """A switch into or out of the open sort that would strand the annotators' work."""


@dataclass(frozen=True)
class TagInput:
    """One tag as the annotator gave it: a name (theirs, or new) and, for a new tag, a
    short description."""

    name: str
    description: str = ""


def normalise(name: str) -> str:
    """A tag name as stored: no spaces at the ends, one space between words."""
    return " ".join(name.split())


def _shown(name: str) -> str:
    return name if len(name) <= 40 else name[:39] + "…"


def clean_tags(tags: Iterable[TagInput]) -> list[TagInput]:
    """The tags, checked and normalised, each once (names compare without regard to case:
    "Vague goal" and "vague goal" are one tag). TagRefused names the first bad one."""
    out: dict[str, TagInput] = {}
    for position, tag in enumerate(tags, start=1):
        name, description = normalise(tag.name), tag.description.strip()
        if not name:
            raise TagRefused("tag", f"Tag {position}: the name is blank; write a name.")
        if "\x00" in name or "\x00" in description:
            raise TagRefused("tag", f"Tag “{_shown(name)}”: a NUL character is not allowed.")
        if len(name) > MAX_NAME:
            raise TagRefused(
                "tag",
                f"Tag “{_shown(name)}”: a tag name has at most {MAX_NAME} characters "
                f"(this one has {len(name)}).",
            )
        if len(description) > MAX_DESCRIPTION:
            raise TagRefused(
                "description",
                f"Description of tag “{_shown(name)}”: at most {MAX_DESCRIPTION} characters "
                f"(this one has {len(description)}).",
            )
        key = name.casefold()
        if key not in out or (description and not out[key].description):
            out[key] = TagInput(name, description)
    return list(out.values())


# --- one's own tags ---------------------------------------------------------------------------


def my_tags(study: Study, user) -> QuerySet[FreeTag]:
    """The tags `user` created in `study`: theirs only, whoever else tags the same cards."""
    return FreeTag.objects.filter(study=study, author=user)


def search_my_tags(study: Study, user, text: str, limit: int = SUGGESTIONS) -> list[FreeTag]:
    """The autocomplete: `user`'s own tags whose name holds `text`, those that start with it
    first; all of them (the first `limit`) for an empty `text`."""
    tags = my_tags(study, user)
    text = normalise(text)
    if text:
        starts = When(name__istartswith=text, then=Value(0))
        tags = tags.filter(name__icontains=text).annotate(
            rank=Case(starts, default=Value(1), output_field=IntegerField())
        )
        tags = tags.order_by("rank", "name", "pk")
    return list(tags[:limit])


def _own_tag(study: Study, author, tag: TagInput) -> FreeTag:
    """The author's tag of that name (any case), created with its description if new; a
    description given for an own tag that has none is kept."""
    existing = my_tags(study, author).filter(name__iexact=tag.name).first()
    if existing is None:
        existing, _ = FreeTag.objects.get_or_create(
            study=study, author=author, name=tag.name, defaults={"description": tag.description}
        )
    elif tag.description and not existing.description:
        existing.description = tag.description
        existing.save(update_fields=["description"])
    return existing


# --- tag sets ----------------------------------------------------------------------------------


def tag_set_of(turn: Turn, group: Group, user) -> TagSet | None:
    """`user`'s own tag set on the card (None: not tagged yet)."""
    return (
        TagSet.objects.filter(turn=turn, group=group, annotator=user)
        .prefetch_related("tags")
        .first()
    )


def save_tag_set(
    *,
    turn: Turn,
    group: Group,
    annotator,
    tags: Sequence[TagInput],
    note: str = "",
    no_smell: bool = False,
) -> TagSet:
    """Save the annotator's tag set on the card: exactly these tags (their own, new ones
    created), replacing what they had; an empty set only with `no_smell`, so a stray Enter
    never records "no smell". TagRefused (nothing saved) for bad input or a group that is
    not open-sorting, or frozen meanwhile (BoardWasFrozen).

    The study's row is locked as the freeze (and the board, and the phase switches) lock it,
    and everything is looked at again under that lock: a tag save and a freeze run one after
    the other, the second sees what the first did, and no tag set lands after the freeze
    mapped the others (it would never become a label) nor during it."""
    check_open(group, annotator)
    cleaned = clean_tags(tags)
    note = note.strip()
    if len(note) > MAX_NOTE:
        raise TagRefused("note", f"Note: at most {MAX_NOTE} characters (yours has {len(note)}).")
    if "\x00" in note:
        raise TagRefused("note", "Note: a NUL character is not allowed.")
    if no_smell and cleaned:
        raise TagRefused("no_smell", 'Choose either tags or "no smell", not both.')
    if not no_smell and not cleaned:
        raise TagRefused("tag", 'Add at least one tag, or tick "no smell" (key 0).')
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=group.study_id)
        event = frozen_event(study)
        if event is not None:
            raise BoardWasFrozen(event)
        group = Group.objects.get(pk=group.pk)
        group.study = study
        check_open(group, annotator)
        chosen = [_own_tag(study, annotator, tag) for tag in cleaned]
        tag_set, _ = TagSet.objects.update_or_create(
            turn=turn,
            group=group,
            annotator=annotator,
            defaults={"note": note, "updated_at": timezone.now()},
        )
        tag_set.tags.set(chosen)
    return tag_set


def check_open(group: Group, annotator) -> None:
    if not group.open_sorting:
        raise NotOpenSorting(group)
    visit = lock_of(group.study, annotator)
    if visit is not None:
        raise TagsLocked(visit)


def tagged_without_labels(user) -> QuerySet[TagSet]:
    """`user`'s tag sets on cards where they have no current round-1 label: added to the
    labels, they count each card they are done with once (the freeze turns tag sets into
    round-1 labels, and the card must not count twice)."""
    labelled = Annotation.objects.filter(
        turn_id=OuterRef("turn_id"), annotator=user, round=1, is_current=True
    )
    return TagSet.objects.filter(annotator=user).exclude(Exists(labelled))


# --- the lead's switch ------------------------------------------------------------------------


def _round1_labels(group: Group) -> int:
    """Round-1 labels the group's labellers gave on its cards (closed sort, or mapped)."""
    return Annotation.objects.filter(
        round=1,
        turn__conversation__assignments__group=group,
        annotator_id__in=group.labeller_ids(),
    ).count()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def check_switch(group: Group, before: str, after: str) -> None:
    """PhaseRefused when `group` may not go from phase `before` to `after`: into the open
    sort once it has round-1 labels (its tags would no longer be a first, independent
    judgment), out of it once tag sets exist (they wait for the freeze)."""
    if before == after:
        return
    if after == Phase.OPEN_SORT:
        n = _round1_labels(group)
        if n:
            raise PhaseRefused(
                f"Group {group.name} cannot open-sort: its annotators have given "
                f"{_plural(n, 'round-1 label')} in the closed sort already. An open sort comes "
                "before any labels, so that each annotator's tags are their own first judgment."
            )
    elif before == Phase.OPEN_SORT:
        n = TagSet.objects.filter(group=group).count()
        if n:
            raise PhaseRefused(
                f"Group {group.name} cannot leave the open sort: its annotators have tagged "
                f"{_plural(n, 'card')}. Tag sets become round-1 labels at the freeze of the "
                "consolidated taxonomy; leaving the open sort now would strand them."
            )


def set_study_phase(study: Study, phase: str) -> None:
    """Switch the study; the groups that follow it (no phase of their own) switch with it,
    and none may be refused."""
    if phase not in Phase.values:
        raise PhaseRefused(f"Unknown phase {phase!r}: choose one of {', '.join(Phase.values)}.")
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        for group in study.groups.filter(phase=""):
            check_switch(group, study.phase, phase)
        study.phase = phase
        study.save(update_fields=["phase"])


def set_group_phase(group: Group, phase: str) -> None:
    """Give the group a phase of its own, or ("") let it follow the study's."""
    if phase and phase not in Phase.values:
        raise PhaseRefused(
            f"Unknown phase {phase!r}: choose one of {', '.join(Phase.values)}, or none."
        )
    with transaction.atomic():
        # the study's row first, as a tag save locks it: the switch and a tag save on the
        # group's cards run one after the other (no tag set lands in a group that just left)
        Study.objects.select_for_update().get(pk=group.study_id)
        group = Group.objects.select_for_update().select_related("study").get(pk=group.pk)
        check_switch(group, group.effective_phase, phase or group.study.phase)
        group.phase = phase
        group.save(update_fields=["phase"])
