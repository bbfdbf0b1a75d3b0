"""The open sort from files, so an expert phase can be audited and replicated without the
pages (issue 20, point 5): every tag set written out (export_tags), tag sets read in through
the card's own rules (import_tags), and the board's tag-to-type mapping read from a file and
frozen as the board's button freezes (freeze_board).

Tag sets, JSON lines, one per (card, group, annotator):
    {"conversation": external id, "conversation_key": key, "turn": 1-based index,
     "group": name, "annotator": username, "tags": [name, or {"name", "description"}],
     "note": "...", "no_smell": false}
A conversation is named by "conversation" (its key or external id; an id several share is an
error naming their keys) and/or "conversation_key" (its key exactly): conversation_keys.
An import goes through tagging.save_tag_set, the card's one entry point: the group must be in
the open sort, the annotator seated in it and not locked by a board visit, the board not
frozen. All or nothing: any bad line is named (`file:line: field: why`) and nothing is saved.

The mapping, a JSON object:
    {"types": [{"name", "category", "definition", "example"}],
     "tags": {"tag name": "type name"}  or  [{"tag", "author" (optional), "type"}]}
A tag is found by its name on the board (a renamed tag's new name, else its author's; any
case); without "author" the entry maps every author's tag of that name. A type of "tags" is
one of "types" (created on the board) or already on the board. The types are created and the
tags grouped as the board records them (its history says so), then the freeze runs: one
transaction, so a refused freeze (a tag used on a card left without a type) changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from .. import conversation_keys
from ..models import BoardType, Conversation, FreeTag, Group, Study, TagSet, Turn
from . import board
from .freeze import FreezeResult, freeze
from .reading import root_of
from .tagging import TagInput, TagRefused, check_open, save_tag_set

MAX_LINE = 1_000_000  # bytes of one line of a tag-set file
MAX_ERRORS = 200
TYPE_FIELDS = ("name", "category", "definition", "example")


class TagFileError(ValueError):
    """A file that cannot be used as given; `errors` name each place. Nothing was changed."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors[:MAX_ERRORS]))
        self.errors = errors


# -- export ------------------------------------------------------------------------------------


def export_tag_sets(study: Study) -> Iterator[dict]:
    """Every tag set of the study, in card then group then annotator order."""
    sets = (
        TagSet.objects.filter(group__study=study)
        .select_related("turn__conversation", "group", "annotator")
        .prefetch_related("tags")
        .order_by("turn__conversation_id", "turn__index", "group__name", "annotator__username")
    )
    for ts in sets.iterator(chunk_size=500):
        tags = sorted(ts.tags.all(), key=lambda t: t.name.casefold())
        yield {
            "conversation": ts.turn.conversation.external_id,
            "conversation_key": ts.turn.conversation.key,
            "turn": ts.turn.index,
            "group": ts.group.name,
            "annotator": ts.annotator.username,
            "tags": [{"name": t.name, "description": t.description} for t in tags],
            "note": ts.note,
            "no_smell": not tags,
        }


# -- import ------------------------------------------------------------------------------------


@dataclass
class _Line:
    where: str
    turn: Turn
    group: Group
    annotator: object
    tags: list[TagInput]
    note: str
    no_smell: bool


def _lines(path) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if len(raw) > MAX_LINE:
                raise TagFileError([f"{path}:{number}: the line is over {MAX_LINE} bytes"])
            text = raw.decode("utf-8", errors="replace").strip()
            if text:
                yield number, text


def _tag(value, where: str) -> TagInput:
    if isinstance(value, str):
        return TagInput(value)
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        description = value.get("description", "")
        if not isinstance(description, str):
            raise ValueError(f"{where}: tags: a description is a string")
        return TagInput(value["name"], description)
    raise ValueError(f"{where}: tags: each tag is a name or {{name, description}}")


class _Resolver:
    """Conversations, groups and users by their names, each looked up once."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.conversations: dict[tuple, object] = {}  # (name, key) -> pk or the error
        self.groups = {g.name: g for g in Group.objects.filter(study=study)}
        self.users: dict[str, object] = {}

    def turn(self, name, key, index, where: str) -> Turn:
        """The turn `index` of the conversation named by `name` (a key or an external id)
        and/or `key` (a key exactly): conversation_keys.one."""
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"{where}: conversation: an external id or a key (a string)")
        if name is None and key is None:
            raise ValueError(f"{where}: conversation: an external id (a string) is required")
        if not isinstance(index, int) or isinstance(index, bool) or index < 1:
            raise ValueError(f"{where}: turn: a turn number from 1 is required")
        if (name, key) not in self.conversations:
            self.conversations[(name, key)] = self._conversation(name, key)
        found = self.conversations[(name, key)]
        if isinstance(found, ValueError):
            raise ValueError(f"{where}: {found}")
        turn = Turn.objects.filter(conversation_id=found.pk, index=index).first()
        if turn is None:
            raise ValueError(f"{where}: turn: conversation {found.key!r} has no turn {index}")
        return turn

    def _conversation(self, name, key):
        names, keys = [name] if name else [], [key] if isinstance(key, str) else []
        rows = conversation_keys.rows_for(
            Conversation.objects.filter(study=self.study).visible(), names, keys
        )
        try:
            return conversation_keys.one(
                name,
                key,
                conversation_keys.match(names, rows),
                conversation_keys.match_keys(keys, rows),
                unknown="no conversation {!r} here",
            )
        except ValueError as e:
            return e

    def group(self, name, where: str) -> Group:
        group = self.groups.get(name) if isinstance(name, str) else None
        if group is None:
            raise ValueError(f"{where}: group: no group {name!r} in this study")
        return group

    def user(self, username, where: str):
        if not isinstance(username, str) or not username:
            raise ValueError(f"{where}: annotator: a username is required")
        if username not in self.users:
            found = get_user_model().objects.filter(username=username).first()
            self.users[username] = found
        if self.users[username] is None:
            raise ValueError(f"{where}: annotator: no user {username!r}")
        return self.users[username]


def _read_line(resolve: _Resolver, where: str, text: str) -> _Line:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: a tag set is a JSON object")
    turn = resolve.turn(
        obj.get("conversation"), obj.get("conversation_key"), obj.get("turn"), where
    )
    group = resolve.group(obj.get("group"), where)
    annotator = resolve.user(obj.get("annotator"), where)
    if not group.annotators.filter(pk=annotator.pk).exists():
        raise ValueError(f"{where}: annotator: {annotator} is not an annotator of {group.name}")
    if not group.assignments.filter(conversation_id=turn.conversation_id).exists():
        raise ValueError(f"{where}: conversation: not assigned to group {group.name}")
    try:
        check_open(group, annotator)  # the card's rules, looked at again when saving
    except TagRefused as e:
        raise ValueError(f"{where}: {e.field}: {e}") from None
    tags = obj.get("tags", [])
    if not isinstance(tags, list):
        raise ValueError(f"{where}: tags: a list of tags")
    note = obj.get("note", "")
    if not isinstance(note, str):
        raise ValueError(f"{where}: note: a string")
    no_smell = obj.get("no_smell", False)
    if not isinstance(no_smell, bool):
        raise ValueError(f"{where}: no_smell: true or false")
    chosen = [_tag(t, where) for t in tags]
    return _Line(where, turn, group, annotator, chosen, note, no_smell)


def import_tag_sets(study: Study, path) -> int:
    """Save the file's tag sets (module docstring); how many. TagFileError names every bad
    line, and then nothing is saved."""
    resolve = _Resolver(study)
    lines, errors = [], []
    for number, text in _lines(path):
        try:
            lines.append(_read_line(resolve, f"{path}:{number}", text))
        except ValueError as e:
            errors.append(str(e))
    if errors:
        raise TagFileError(errors)
    if not lines:
        raise TagFileError([f"{path}: no tag set in the file"])
    with transaction.atomic():
        for line in lines:
            try:
                save_tag_set(
                    turn=line.turn,
                    group=line.group,
                    annotator=line.annotator,
                    tags=line.tags,
                    note=line.note,
                    no_smell=line.no_smell,
                )
            except TagRefused as e:
                errors.append(f"{line.where}: {e.field}: {e}")
        if errors:
            transaction.set_rollback(True)
    if errors:
        raise TagFileError(errors)
    return len(lines)


# -- the mapping and the freeze ----------------------------------------------------------------


@dataclass
class Mapping:
    types: list[dict] = field(default_factory=list)
    tags: list[dict] = field(default_factory=list)  # {tag, author (or ""), type}


def _text(entry: dict, key: str, where: str, required: bool = False) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{where}: {key}: {'a name' if required else 'a string'} is required")
    return value.strip()


def read_mapping(path) -> Mapping:
    """The mapping file, checked; TagFileError names each bad place (`file: field[i]: why`)."""
    with open(path, "rb") as f:
        raw = f.read(MAX_LINE * 10 + 1)
    if len(raw) > MAX_LINE * 10:
        raise TagFileError([f"{path}: the mapping is over {MAX_LINE * 10} bytes"])
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as e:
        raise TagFileError([f"{path}:{e.lineno}: not JSON ({e.msg})"]) from None
    if not isinstance(data, dict):
        raise TagFileError([f"{path}: the mapping is a JSON object with 'types' and 'tags'"])
    errors: list[str] = []
    mapping = Mapping()
    types = data.get("types", [])
    if not isinstance(types, list):
        errors.append(f"{path}: types: a list of {{name, category, definition, example}}")
        types = []
    for i, entry in enumerate(types):
        where = f"{path}: types[{i}]"
        try:
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: an object with a name")
            mapping.types.append(
                {key: _text(entry, key, where, key == "name") for key in TYPE_FIELDS}
            )
        except ValueError as e:
            errors.append(str(e))
    tags = data.get("tags")
    if isinstance(tags, dict):
        tags = [{"tag": tag, "type": to} for tag, to in tags.items()]
    if not isinstance(tags, list) or not tags:
        errors.append(f"{path}: tags: {{tag: type}} or a list of {{tag, author, type}}")
        tags = []
    for i, entry in enumerate(tags):
        where = f"{path}: tags[{i}]"
        try:
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: an object with tag and type")
            mapping.tags.append(
                {
                    "tag": _text(entry, "tag", where, True),
                    "author": _text(entry, "author", where),
                    "type": _text(entry, "type", where, True),
                    "where": where,
                }
            )
        except ValueError as e:
            errors.append(str(e))
    if errors:
        raise TagFileError(errors)
    return mapping


def _roots_named(study: Study, tag: str, author: str) -> set[int]:
    """The board tags (the ends of merge chains) a mapping entry names."""
    rows = list(FreeTag.objects.filter(study=study).select_related("author"))
    parent = {t.pk: t.merged_into_id for t in rows}
    wanted = tag.casefold()
    return {
        root_of(t.pk, parent)
        for t in rows
        if (t.board_name or t.name).casefold() == wanted
        and (not author or t.author.username == author)
    }


def freeze_with_mapping(study: Study, mapping: Mapping, actor=None) -> FreezeResult:
    """Create the mapping's types, group its tags under them, and freeze: as the board's
    buttons do, in one transaction. TagFileError (nothing changed) for a name the board does
    not have, or a tag mapped to two types; FreezeRefused as the button is refused."""
    with transaction.atomic():
        on_board = {bt.name.casefold(): bt for bt in BoardType.objects.filter(study=study)}
        for entry in mapping.types:
            if entry["name"].casefold() not in on_board:
                board.create_type(study, actor, **entry)
        on_board = {bt.name.casefold(): bt for bt in BoardType.objects.filter(study=study)}
        errors, chosen = [], {}
        for entry in mapping.tags:
            bt = on_board.get(entry["type"].casefold())
            roots = _roots_named(study, entry["tag"], entry["author"])
            if bt is None:
                errors.append(f"{entry['where']}: type: no type {entry['type']!r}")
            if not roots:
                by = f" by {entry['author']}" if entry["author"] else ""
                errors.append(f"{entry['where']}: tag: no tag {entry['tag']!r}{by}")
            for root in roots if bt is not None else ():
                if chosen.setdefault(root, bt).pk != bt.pk:
                    errors.append(
                        f"{entry['where']}: tag: {entry['tag']!r} is mapped to "
                        f"{chosen[root].name!r} too"
                    )
        if errors:
            raise TagFileError(errors)
        current = dict(FreeTag.objects.filter(pk__in=chosen).values_list("pk", "board_type_id"))
        for root, bt in chosen.items():
            if current.get(root) != bt.pk:
                board.set_tag_type(study, actor, root, bt.pk)
        return freeze(study, actor)


def write_jsonl(rows: Iterable[dict], out) -> int:
    n = 0
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n
