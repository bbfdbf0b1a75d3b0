"""The consolidation board's operations: what the lead and the experts consolidate an open
sort's free tags with (rename, merge, group under a type, types and categories; reading.py
holds what the board shows). The author's words (`FreeTag.name`,
`description`) never change; the board works on `board_name`, `merged_into` and `board_type`.

Each operation is one transaction that locks the study row first (board operations of a study
run one after the other, so two editors never overwrite each other) and records a BoardEvent
with the changed rows' values before and after. Undo applies `before` of the newest change not
undone, redo applies `after` of the newest undone one; both are refused, with the reason, when
the page asking was stale (someone changed the board since) or the board is frozen."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from ..models import BoardEvent, BoardType, FreeTag, Study
from .reading import FREEZE, redo_candidate, root_of, undo_candidate

# the fields of a row the board changes, and so the fields an event records
TAG_FIELDS = ("board_name", "merged_into_id", "board_type_id")
TYPE_FIELDS = ("category", "name", "definition", "example", "order")


class BoardError(ValueError):
    """An operation that cannot be done as asked (422); nothing was changed."""


class BoardConflict(BoardError):
    """Someone else changed the board since the page asking was drawn (409); nothing was
    changed."""


class BoardFrozen(BoardError):
    """The board was frozen into a taxonomy version: it no longer changes."""


# -- snapshots: what an event records and what undo and redo apply ----------------------------


def _tag_row(tag: FreeTag) -> dict:
    return {f: getattr(tag, f) for f in TAG_FIELDS}


def _type_row(bt: BoardType | None) -> dict | None:
    return None if bt is None else {f: getattr(bt, f) for f in TYPE_FIELDS}


class _Change:
    """The rows one operation changes: their values before (taken when first touched) and
    after (taken at the end)."""

    def __init__(self) -> None:
        self.tags: dict[int, FreeTag] = {}
        self.types: dict[int, BoardType | None] = {}
        self.before: dict = {"tags": {}, "types": {}}

    def tag(self, tag: FreeTag) -> FreeTag:
        if tag.pk not in self.tags:
            self.before["tags"][str(tag.pk)] = _tag_row(tag)
            self.tags[tag.pk] = tag
        return self.tags[tag.pk]

    def type(self, bt: BoardType, created: bool = False) -> BoardType:
        if bt.pk not in self.types:
            self.before["types"][str(bt.pk)] = None if created else _type_row(bt)
            self.types[bt.pk] = bt
        return bt

    def deleted(self, pk: int) -> None:
        self.types[pk] = None

    def after(self) -> dict:
        return {
            "tags": {str(pk): _tag_row(t) for pk, t in self.tags.items()},
            "types": {str(pk): _type_row(bt) for pk, bt in self.types.items()},
        }


def _current(study: Study, snapshot: dict) -> dict:
    """The rows named by `snapshot` as they are now, in its shape."""
    tag_ids = [int(pk) for pk in snapshot.get("tags", {})]
    type_ids = [int(pk) for pk in snapshot.get("types", {})]
    tags = FreeTag.objects.filter(study=study, pk__in=tag_ids).in_bulk()
    types = BoardType.objects.filter(study=study, pk__in=type_ids).in_bulk()
    return {
        "tags": {str(pk): _tag_row(tags[pk]) if pk in tags else None for pk in tag_ids},
        "types": {str(pk): _type_row(types.get(pk)) for pk in type_ids},
    }


def _apply(study: Study, snapshot: dict) -> None:
    """Put the rows of `snapshot` back to its values: types first (a tag may point at a type
    it recreates), then tags, then the types it deletes."""
    for pk, row in snapshot.get("types", {}).items():
        if row is not None:
            BoardType.objects.update_or_create(pk=int(pk), study=study, defaults=row)
    for pk, row in snapshot.get("tags", {}).items():
        FreeTag.objects.filter(pk=int(pk), study=study).update(**row)
    gone = [int(pk) for pk, row in snapshot.get("types", {}).items() if row is None]
    if gone:
        FreeTag.objects.filter(board_type_id__in=gone).update(board_type=None)
        BoardType.objects.filter(study=study, pk__in=gone).delete()


# -- operations ------------------------------------------------------------------------------


def _lock(study: Study) -> Study:
    """The study row, locked: a study's board operations run one at a time. No join in the
    locking query (PostgreSQL rechecks a joined row against the old one, see Proposal)."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    if BoardEvent.objects.filter(study=study, action=FREEZE).exists():
        raise BoardFrozen(
            "The board was frozen into a taxonomy version: it no longer changes. Changes to "
            "the taxonomy now go through a new version."
        )
    return locked


def _record(study: Study, actor, action: str, summary: str, change: _Change) -> BoardEvent:
    return BoardEvent.objects.create(
        study=study,
        actor=actor,
        action=action,
        summary=summary[:300],
        before=change.before,
        after=change.after(),
    )


def _get_tag(study: Study, tag_id) -> FreeTag:
    try:
        return FreeTag.objects.select_for_update().get(study=study, pk=int(tag_id))
    except (FreeTag.DoesNotExist, TypeError, ValueError):
        raise BoardError(f"No tag {tag_id!r} on this study's board.") from None


def _get_type(study: Study, type_id) -> BoardType:
    try:
        return BoardType.objects.select_for_update().get(study=study, pk=int(type_id))
    except (BoardType.DoesNotExist, TypeError, ValueError):
        raise BoardError(
            f"No type {type_id!r} on this study's board (deleted by someone since?)."
        ) from None


def _label(tag: FreeTag) -> str:
    return tag.board_name or tag.name


def _root(study: Study, tag: FreeTag) -> FreeTag:
    parent = dict(FreeTag.objects.filter(study=study).values_list("pk", "merged_into_id"))
    root = root_of(tag.pk, parent)
    return tag if root == tag.pk else _get_tag(study, root)


def _clean(value: str, what: str, max_length: int, required: bool = True) -> str:
    value = (value or "").strip()
    if required and not value:
        raise BoardError(f"{what}: required.")
    if len(value) > max_length:
        raise BoardError(f"{what}: at most {max_length} characters (got {len(value)}).")
    return value


def rename_tag(study: Study, actor, tag_id, name: str, was: str | None = None) -> BoardEvent:
    """The tag's name on the board (the author's `name` stays). Empty: back to the author's
    name. `was`: the board name the page showed; refused when someone renamed it since."""
    with transaction.atomic():
        _lock(study)
        tag = _get_tag(study, tag_id)
        name = _clean(name, "Tag name", 100, required=False)
        if was is not None and was != tag.board_name:
            raise BoardConflict(
                f"Someone renamed the tag {tag.name!r} to {_label(tag)!r} since: nothing was "
                "changed. Rename it again if you still want to."
            )
        old = _label(tag)
        change = _Change()
        change.tag(tag).board_name = "" if name == tag.name else name
        if tag.board_name == change.before["tags"][str(tag.pk)]["board_name"]:
            raise BoardError(f"The tag is already named {old!r}.")
        tag.save(update_fields=["board_name"])
        return _record(
            study, actor, "rename_tag", f"Renamed tag {old!r} to {_label(tag)!r}", change
        )


def merge_tags(study: Study, actor, tag_ids, target_id) -> BoardEvent:
    """Merge the tags into `target` (any authors'): they count as the target's uses and
    follow its type. Merging into a merged tag merges into the tag its chain ends at; tags
    merged into a merged tag move to the end of the chain too, so a chain is one step."""
    with transaction.atomic():
        _lock(study)
        target = _root(study, _get_tag(study, target_id))
        sources = [_root(study, _get_tag(study, pk)) for pk in tag_ids]
        sources = list({s.pk: s for s in sources if s.pk != target.pk}.values())
        if not sources:
            raise BoardError(f"Nothing to merge: the tags are already {_label(target)!r}.")
        change = _Change()
        followers = FreeTag.objects.select_for_update().filter(
            study=study, merged_into__in=[s.pk for s in sources]
        )
        for tag in [*sources, *followers]:
            change.tag(tag)
            tag.merged_into_id, tag.board_type_id = target.pk, None
            tag.save(update_fields=["merged_into", "board_type"])
        names = ", ".join(repr(_label(s)) for s in sources)
        return _record(study, actor, "merge", f"Merged {names} into {_label(target)!r}", change)


def unmerge_tag(study: Study, actor, tag_id) -> BoardEvent:
    """Take a merged tag out of its merge: it stands alone again, without a type."""
    with transaction.atomic():
        _lock(study)
        tag = _get_tag(study, tag_id)
        if tag.merged_into_id is None:
            raise BoardError(f"The tag {_label(tag)!r} is not merged into another.")
        target = FreeTag.objects.get(pk=tag.merged_into_id)
        change = _Change()
        change.tag(tag)
        tag.merged_into_id = None
        tag.save(update_fields=["merged_into"])
        summary = f"Took {_label(tag)!r} out of {_label(target)!r}"
        return _record(study, actor, "unmerge", summary, change)


def set_tag_type(study: Study, actor, tag_id, type_id) -> BoardEvent:
    """Group the tag (the tag its merge chain ends at) under a type, or take it out (None)."""
    with transaction.atomic():
        _lock(study)
        tag = _root(study, _get_tag(study, tag_id))
        bt = _get_type(study, type_id) if type_id not in (None, "") else None
        if tag.board_type_id == (bt.pk if bt else None):
            where = f"under {bt.name!r}" if bt else "without a type"
            raise BoardError(f"The tag {_label(tag)!r} is already {where}.")
        change = _Change()
        change.tag(tag).board_type = bt
        tag.save(update_fields=["board_type"])
        if bt is None:
            summary = f"Took {_label(tag)!r} out of its type"
        else:
            summary = f"Put {_label(tag)!r} under type {bt.name!r}"
        return _record(study, actor, "set_type", summary, change)


def create_type(
    study: Study, actor, name: str, category: str = "", definition: str = "", example: str = ""
) -> BoardEvent:
    with transaction.atomic():
        _lock(study)
        name = _clean(name, "Type name", 200)
        category = _clean(category, "Category", 200, required=False)
        if BoardType.objects.filter(study=study, name__iexact=name).exists():
            raise BoardError(f"A type named {name!r} is already on the board.")
        last = BoardType.objects.filter(study=study, category=category).aggregate(n=Max("order"))
        bt = BoardType.objects.create(
            study=study,
            name=name,
            category=category,
            definition=_clean(definition, "Definition", 5000, required=False),
            example=_clean(example, "Example", 5000, required=False),
            order=(last["n"] + 1) if last["n"] is not None else 0,
        )
        change = _Change()
        change.type(bt, created=True)
        where = f" in {category!r}" if category else ""
        return _record(study, actor, "create_type", f"Created type {name!r}{where}", change)


def update_type(study: Study, actor, type_id, was: dict | None = None, **values) -> BoardEvent:
    """Change a type's name, category, definition or example. `was`: the values the page
    showed; only the fields that differ from them are written, and a field someone else
    changed since is refused (nobody's edit is lost)."""
    with transaction.atomic():
        _lock(study)
        bt = _get_type(study, type_id)
        limits = {"name": 200, "category": 200, "definition": 5000, "example": 5000}
        wanted = {}
        for key, value in values.items():
            if key not in limits or value is None:
                continue
            value = _clean(value, key.capitalize(), limits[key], required=key == "name")
            if was is not None and was.get(key) is not None and was[key] == value:
                continue  # not changed on this page: leave whatever is there now
            if was is not None and was.get(key) is not None and was[key] != getattr(bt, key):
                raise BoardConflict(
                    f"Someone changed the {key} of type {bt.name!r} since: it is now "
                    f"{getattr(bt, key)!r}. Nothing was changed."
                )
            if value != getattr(bt, key):
                wanted[key] = value
        if not wanted:
            raise BoardError(f"Nothing to change on type {bt.name!r}.")
        name = wanted.get("name")
        if name and BoardType.objects.filter(study=study, name__iexact=name).exclude(pk=bt.pk):
            raise BoardError(f"A type named {name!r} is already on the board.")
        change = _Change()
        old_name = bt.name
        change.type(bt)
        for key, value in wanted.items():
            setattr(bt, key, value)
        bt.save(update_fields=list(wanted))
        what = ", ".join(sorted(wanted))
        return _record(study, actor, "update_type", f"Changed {what} of type {old_name!r}", change)


def delete_type(study: Study, actor, type_id) -> BoardEvent:
    """Delete a type; its tags go back to the tags without a type."""
    with transaction.atomic():
        _lock(study)
        bt = _get_type(study, type_id)
        change = _Change()
        change.type(bt)
        for tag in FreeTag.objects.select_for_update().filter(study=study, board_type=bt):
            change.tag(tag).board_type_id = None
            tag.save(update_fields=["board_type"])
        pk, name = bt.pk, bt.name
        bt.delete()
        change.deleted(pk)
        return _record(study, actor, "delete_type", f"Deleted type {name!r}", change)


def rename_category(study: Study, actor, old: str, new: str) -> BoardEvent:
    with transaction.atomic():
        _lock(study)
        new = _clean(new, "Category", 200, required=False)
        types = list(BoardType.objects.select_for_update().filter(study=study, category=old))
        if not types:
            raise BoardError(f"No category {old!r} on the board (renamed by someone since?).")
        if new == old:
            raise BoardError(f"The category is already named {old!r}.")
        change = _Change()
        start = BoardType.objects.filter(study=study, category=new).aggregate(n=Max("order"))["n"]
        start = -1 if start is None else start
        for i, bt in enumerate(sorted(types, key=lambda t: (t.order, t.pk)), start + 1):
            change.type(bt)
            bt.category, bt.order = new, i
            bt.save(update_fields=["category", "order"])
        summary = f"Renamed category {old or '(none)'!r} to {new or '(none)'!r}"
        return _record(study, actor, "rename_category", summary, change)


def move_type(study: Study, actor, type_id, direction: str) -> BoardEvent:
    """Move a type one place up or down in its category."""
    if direction not in ("up", "down"):
        raise BoardError(f"Move a type up or down, not {direction!r}.")
    with transaction.atomic():
        _lock(study)
        bt = _get_type(study, type_id)
        siblings = list(
            BoardType.objects.select_for_update()
            .filter(study=study, category=bt.category)
            .order_by("order", "pk")
        )
        i = next(n for n, s in enumerate(siblings) if s.pk == bt.pk)
        j = i - 1 if direction == "up" else i + 1
        if not 0 <= j < len(siblings):
            raise BoardError(f"Type {bt.name!r} is already the {'first' if j < 0 else 'last'}.")
        siblings[i], siblings[j] = siblings[j], siblings[i]
        change = _Change()
        for order, s in enumerate(siblings):
            if s.order != order:
                change.type(s)
                s.order = order
                s.save(update_fields=["order"])
        if not change.types:  # equal orders: the swap is the same sequence renumbered
            raise BoardError(f"Type {bt.name!r} did not move.")
        return _record(study, actor, "move_type", f"Moved type {bt.name!r} {direction}", change)


def undo(study: Study, actor, event_id=None) -> BoardEvent:
    """Revert the newest change not undone. `event_id`: the change the page offered to undo;
    refused when it is no longer the newest (someone changed the board since)."""
    return _step(study, event_id, "undo")


def redo(study: Study, actor, event_id=None) -> BoardEvent:
    """Apply again the newest change undone (as undo, for `event_id`)."""
    return _step(study, event_id, "redo")


def _step(study: Study, event_id, word: str) -> BoardEvent:
    """Undo or redo: the change's rows must be as it left them (undo) or as they were before
    it (redo), else BoardConflict and nothing is changed."""
    undoing = word == "undo"
    with transaction.atomic():
        _lock(study)
        event = (undo_candidate if undoing else redo_candidate)(study)
        if event is None:
            raise BoardError(f"Nothing to {word}.")
        _check_offered(event, event_id, word)
        now, then = (event.after, event.before) if undoing else (event.before, event.after)
        if _current(study, now) != _normal(now):
            raise BoardConflict(
                f"Cannot {word} {event.summary!r}: its rows changed since. Nothing was changed."
            )
        _apply(study, then)
        event.undone = undoing
        event.save(update_fields=["undone"])
        return event


def _normal(snapshot: dict) -> dict:
    return {"tags": snapshot.get("tags", {}), "types": snapshot.get("types", {})}


def _check_offered(event: BoardEvent, event_id, what: str) -> None:
    if event_id in (None, ""):
        return
    if str(event.pk) != str(event_id):
        who = event.actor.username if event.actor else "someone"
        raise BoardConflict(
            f"The board changed since your page was drawn: the change to {what} is now "
            f"{event.summary!r} by {who}. Nothing was {what}ne; look at the board again."
        )


def snapshot(study: Study) -> dict:
    """The board's state (every tag's board fields, every type), to compare two moments."""
    tags = FreeTag.objects.filter(study=study).order_by("pk")
    types = BoardType.objects.filter(study=study).order_by("pk")
    return {
        "tags": {t.pk: _tag_row(t) for t in tags},
        "types": {t.pk: _type_row(t) for t in types},
    }
