"""The freeze: the consolidation board becomes a taxonomy version, and each annotator's tag
sets become their round-1 labels through the board's one tag-to-type mapping.

One transaction, run in the request: it writes one annotation per tag set through
Annotation.submit (the rounds' one entry point), which is fine for the hundreds of cards of an
exploratory open sort (80 conversations in the study); a board of tens of thousands of tag sets
would want a background job. The study row is locked first, so a second freeze (a double
click, two leads at once) waits and is then refused: it happens once; a tag save
(tagging.save_tag_set) takes the same lock, so it lands wholly before the freeze, which then
sees its tags (and is refused while one has no type), or after it, and is refused."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils.text import slugify

from taxonomy.models import Axis, Category, Taxonomy, TaxonomyVersion, Type, free_code

from ..models import (
    Annotation,
    BoardEvent,
    BoardType,
    FreeTag,
    Group,
    Phase,
    RoundClosed,
    Source,
    Study,
    TagSet,
)
from .access import open_sort_cards_left
from .reading import FREEZE, frozen_event, tag_type_map, used_untyped

NO_CATEGORY = "Uncategorised"
AXIS_CODE = "type"


class FreezeRefused(ValueError):
    """The board cannot be frozen now; the message says why. Nothing was changed."""


@dataclass
class FreezePlan:
    """What a freeze would do, for the confirmation page, and why it may not (`refusal`)."""

    study: Study
    categories: list[tuple[str, list[BoardType]]]
    groups: list[Group]
    tag_sets: list[tuple[str, str, int]]  # (annotator, group, tag sets)
    untyped: list[FreeTag]
    empty_types: list[BoardType]
    untagged: list[tuple[str, int]] = field(default_factory=list)  # (annotator, cards left)
    refusal: str = ""

    @property
    def n_types(self) -> int:
        return sum(len(types) for _, types in self.categories)

    @property
    def n_categories(self) -> int:
        return len(self.categories)

    @property
    def n_tag_sets(self) -> int:
        return sum(n for *_, n in self.tag_sets)

    @property
    def experts(self) -> list[str]:
        return sorted({who for who, *_ in self.tag_sets})


def open_sorting_groups(study: Study) -> list[Group]:
    groups = Group.objects.filter(study=study).select_related("study").order_by("name")
    return [g for g in groups if g.open_sorting]


def _tag_sets(groups: list[Group]):
    """The tag sets the freeze maps: of the open-sorting groups, by their current annotators
    (someone taken out of a group no longer labels its cards)."""
    sets = TagSet.objects.none()
    for group in groups:
        sets |= TagSet.objects.filter(group=group, annotator__in=group.annotators.all())
    return sets.select_related("turn__conversation", "group", "annotator").prefetch_related("tags")


def plan(study: Study) -> FreezePlan:
    types = list(BoardType.objects.filter(study=study).order_by("category", "order", "pk"))
    categories: dict[str, list[BoardType]] = {}
    for bt in types:
        categories.setdefault(bt.category or NO_CATEGORY, []).append(bt)
    groups = open_sorting_groups(study)
    counts: dict[tuple[str, str], int] = {}
    for ts in _tag_sets(groups):
        key = (ts.annotator.username, ts.group.name)
        counts[key] = counts.get(key, 0) + 1
    used_types = set(tag_type_map(study).values())
    result = FreezePlan(
        study=study,
        categories=list(categories.items()),
        groups=groups,
        tag_sets=[(who, group, n) for (who, group), n in sorted(counts.items())],
        untyped=sorted(used_untyped(study), key=lambda t: (t.board_name or t.name).lower()),
        empty_types=[bt for bt in types if bt.pk not in used_types],
    )
    for group in groups:
        for user in group.annotators.order_by("username"):
            left = open_sort_cards_left(study, user)
            if left and (user.username, left) not in result.untagged:
                result.untagged.append((user.username, left))
    result.refusal = _refusal(study, result)
    return result


def _refusal(study: Study, p: FreezePlan) -> str:
    event = frozen_event(study)
    if event is not None:
        return f"The board is already frozen: {event.summary}."
    if not p.groups:
        return "No group of this study is in the open sort: there is nothing to freeze."
    if not p.n_types:
        return "The board has no type yet: group the tags under types first."
    if p.untyped:
        names = ", ".join(repr(t.board_name or t.name) for t in p.untyped)
        return (
            f"{len(p.untyped)} tag(s) used on cards have no type: {names}. Put each under a "
            "type (or merge it into a tag that has one) first: a tag without a type would "
            "vanish from its author's labels."
        )
    return ""


@dataclass
class FreezeResult:
    version: TaxonomyVersion
    annotations: int
    event: BoardEvent


def freeze(study: Study, actor) -> FreezeResult:
    """Freeze the board (see the module's docstring). Raises FreezeRefused, changing nothing,
    when plan() refuses, and the second time."""
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        p = plan(study)
        if p.refusal:
            raise FreezeRefused(p.refusal)
        version = _make_version(study, p)
        types = {bt.pk: bt.type for _, bts in p.categories for bt in bts}
        tag_types = tag_type_map(study)
        tag_sets = list(_tag_sets(p.groups))
        study.taxonomy_version = version
        study.phase = Phase.CLOSED_SORT
        study.save(update_fields=["taxonomy_version", "phase"])
        Group.objects.filter(pk__in=[g.pk for g in p.groups], phase=Phase.OPEN_SORT).update(
            phase=Phase.CLOSED_SORT
        )
        n = 0
        for ts in tag_sets:
            # only this annotator's own tags, through the one board mapping
            labels = {}
            for t in ts.tags.all():
                bt = types.get(tag_types.get(t.pk))
                if bt is None:
                    raise FreezeRefused(_untyped(ts, t))
                labels[bt.pk] = bt
            try:
                Annotation.submit(
                    turn=ts.turn,
                    group=ts.group,
                    annotator=ts.annotator,
                    round=1,
                    types=list(labels.values()),
                    source=Source.OPEN_SORT,
                    taxonomy_version=version,
                    note=ts.note,
                )
            except RoundClosed as e:
                raise FreezeRefused(
                    f"Card {ts.turn} of group {ts.group.name!r} has already left round 1, so "
                    f"{ts.annotator}'s tags cannot become round-1 labels there ({e}). Nothing "
                    "was changed."
                ) from None
            n += 1
        summary = (
            f"Froze the board into {version}: {p.n_types} types in {p.n_categories} "
            f"categories; {n} tag sets became round-1 labels"
        )
        event = BoardEvent.objects.create(
            study=study,
            actor=actor,
            action=FREEZE,
            summary=summary,
            after={"version": version.pk, "annotations": n},
        )
    return FreezeResult(version=version, annotations=n, event=event)


def _untyped(ts: TagSet, tag: FreeTag) -> str:
    """A tag set the plan did not see (saved while the freeze was under way): the freeze
    stops rather than leave a tag out of its author's label."""
    return (
        f"The tag {tag.board_name or tag.name!r} of {ts.annotator} on card {ts.turn} of group "
        f"{ts.group.name!r} has no type: it was given while the freeze was under way. Nothing "
        "was changed; put it under a type and freeze again."
    )


def _taxonomy_slug(study: Study) -> str:
    base = slugify(f"{study.slug}-open-sort")[:40]
    slug, n = base, 1
    while Taxonomy.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _make_version(study: Study, p: FreezePlan) -> TaxonomyVersion:
    """A new taxonomy of one multi-select axis: the board's categories and types, codes
    slugified from the names, hotkeys 1-9 in the board's order; frozen. Each BoardType keeps
    its Type (provenance)."""
    taxonomy = Taxonomy.objects.create(
        slug=_taxonomy_slug(study),
        name=f"{study.name}: open sort",
        description=f"Consolidated from the free tags of the open sort of {study.name}.",
        source=f"open sort of study {study.slug}",
    )
    version = TaxonomyVersion.objects.create(taxonomy=taxonomy, number=1)
    axis = Axis.objects.create(version=version, code=AXIS_CODE, name="Type", multi_select=True)
    used: set[str] = set()
    hotkeys = iter("123456789")
    for c_order, (name, types) in enumerate(p.categories):
        category = Category.objects.create(axis=axis, name=name, order=c_order)
        for t_order, bt in enumerate(types):
            code = free_code(bt.name, used)
            used.add(code)
            bt.type = Type.objects.create(
                category=category,
                axis=axis,
                code=code,
                name=bt.name,
                definition=bt.definition,
                example=bt.example,
                hotkey=next(hotkeys, ""),
                order=t_order,
            )
            bt.save(update_fields=["type"])
    version.freeze()
    return version
