"""What the consolidation board shows, and to whom: every free tag of the study (the tag its
merge chain ends at) with its uses (cards), authors and example cards, the types with their
tags, the history, and the blind rule lives in annotation/opensort/access.py. The operations
that change the board are in board.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Max

from ..models import BoardEvent, BoardType, FreeTag, Study, TagSet, Turn

FREEZE = "freeze"  # the action of the BoardEvent a freeze records
EXAMPLES = 3  # example cards per tag on the board

# -- who may see the board -------------------------------------------------------------------


def root_of(tag_id: int, parent: dict[int, int | None]) -> int:
    """The tag a merge chain ends at (a cycle, which the operations never make, stops)."""
    seen = {tag_id}
    while parent.get(tag_id) is not None:
        tag_id = parent[tag_id]
        if tag_id in seen:
            break
        seen.add(tag_id)
    return tag_id


def tag_type_map(study: Study) -> dict[int, int | None]:
    """{tag id: the board type it counts under}: a merged tag follows its target's type."""
    rows = FreeTag.objects.filter(study=study).values_list("pk", "merged_into_id", "board_type_id")
    parent = {pk: merged for pk, merged, _ in rows}
    own_type = {pk: type_id for pk, _, type_id in rows}
    return {pk: own_type[root_of(pk, parent)] for pk in parent}


@dataclass
class BoardTag:
    tag: FreeTag
    label: str
    uses: int = 0
    authors: list[str] = field(default_factory=list)
    examples: list[Turn] = field(default_factory=list)
    merged: list[FreeTag] = field(default_factory=list)  # tags merged into this one

    @property
    def pk(self) -> int:
        return self.tag.pk


@dataclass
class BoardColumn:
    type: BoardType
    tags: list[BoardTag]

    @property
    def uses(self) -> int:
        return sum(t.uses for t in self.tags)


@dataclass
class Board:
    study: Study
    categories: list[tuple[str, list[BoardColumn]]]
    untyped: list[BoardTag]
    types: list[BoardType]
    tags: list[BoardTag]
    undo: BoardEvent | None
    redo: BoardEvent | None
    history: list[BoardEvent]
    frozen: BoardEvent | None


def tag_uses(study: Study) -> dict[int, set[int]]:
    """{tag id: the cards (turn ids) it was used on}, over every tag set of the study."""
    links = TagSet.tags.through.objects.filter(freetag__study=study).values_list(
        "freetag_id", "tagset__turn_id"
    )
    out: dict[int, set[int]] = {}
    for tag_id, turn_id in links:
        out.setdefault(tag_id, set()).add(turn_id)
    return out


def load_board(study: Study, history: int = 30) -> Board:
    """Everything the board page shows, in a handful of queries."""
    tags = list(FreeTag.objects.filter(study=study).select_related("author").order_by("pk"))
    parent = {t.pk: t.merged_into_id for t in tags}
    uses = tag_uses(study)
    by_root: dict[int, BoardTag] = {}
    for t in tags:
        if t.merged_into_id is None:
            by_root[t.pk] = BoardTag(tag=t, label=t.board_name or t.name)
    root_turns: dict[int, set[int]] = {pk: set() for pk in by_root}
    root_authors: dict[int, set[str]] = {pk: set() for pk in by_root}
    for t in tags:
        root = root_of(t.pk, parent)
        if root not in by_root:  # a cycle: show the tag on its own
            continue
        if root != t.pk:
            by_root[root].merged.append(t)
        root_turns[root] |= uses.get(t.pk, set())
        root_authors[root].add(t.author.username)
    wanted = {pk for turns in root_turns.values() for pk in sorted(turns)[:EXAMPLES]}
    turns = Turn.objects.filter(pk__in=wanted).select_related("conversation").in_bulk()
    for pk, bt in by_root.items():
        bt.uses = len(root_turns[pk])
        bt.authors = sorted(root_authors[pk])
        bt.examples = [turns[i] for i in sorted(root_turns[pk])[:EXAMPLES] if i in turns]
    ordered = sorted(by_root.values(), key=lambda b: (-b.uses, b.label.lower(), b.pk))
    types = list(BoardType.objects.filter(study=study).order_by("category", "order", "pk"))
    columns = {bt.pk: BoardColumn(type=bt, tags=[]) for bt in types}
    untyped = []
    for bt in ordered:
        column = columns.get(bt.tag.board_type_id)
        (column.tags if column else untyped).append(bt)
    categories: dict[str, list[BoardColumn]] = {}
    for bt in types:
        categories.setdefault(bt.category, []).append(columns[bt.pk])
    events = BoardEvent.objects.filter(study=study).select_related("actor")
    return Board(
        study=study,
        categories=list(categories.items()),
        untyped=untyped,
        types=types,
        tags=ordered,
        undo=undo_candidate(study),
        redo=redo_candidate(study),
        history=list(events.order_by("-pk")[:history]),
        frozen=frozen_event(study),
    )


def frozen_event(study: Study) -> BoardEvent | None:
    return BoardEvent.objects.filter(study=study, action=FREEZE).first()


def undo_candidate(study: Study) -> BoardEvent | None:
    """The newest change not undone (none once the board is frozen)."""
    events = BoardEvent.objects.filter(study=study)
    if events.filter(action=FREEZE).exists():
        return None
    return events.filter(undone=False).order_by("-pk").first()


def redo_candidate(study: Study) -> BoardEvent | None:
    """The newest undone change newer than every change in force: a new change after an undo
    ends what can be redone."""
    events = BoardEvent.objects.filter(study=study)
    if events.filter(action=FREEZE).exists():
        return None
    newest_done = events.filter(undone=False).aggregate(n=Max("pk"))["n"] or 0
    return events.filter(undone=True, pk__gt=newest_done).order_by("pk").first()


def used_untyped(study: Study) -> list[FreeTag]:
    """The tags used on a card whose merge chain ends at a tag without a type (as the board
    shows them: the tag the chain ends at)."""
    parent = dict(FreeTag.objects.filter(study=study).values_list("pk", "merged_into_id"))
    types = tag_type_map(study)
    used = set(tag_uses(study))
    roots = {root_of(pk, parent) for pk in used if types.get(pk) is None}
    return list(FreeTag.objects.filter(pk__in=roots).select_related("author"))


def tags_of_type(study: Study, bt: BoardType) -> list[FreeTag]:
    """Every tag that counts under the type: those grouped under it and those merged into
    them (any depth)."""
    types = tag_type_map(study)
    ids = [pk for pk, type_id in types.items() if type_id == bt.pk]
    tags = FreeTag.objects.filter(pk__in=ids).select_related("author", "merged_into")
    # the tag grouped under the type first, then those merged into it
    return sorted(tags, key=lambda t: (t.merged_into_id is not None, t.name.lower(), t.pk))
