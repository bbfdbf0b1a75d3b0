"""Import annotations from JSONL (DESIGN.md, "Annotation JSONL"): one record a line,
`{"conversation": id, "turn": 1-based index, "annotator": username, "labels": [codes],
"round": 1, "group": name}` plus optional note, evidence and confidence.

With `judge=True` (`--judge`) the file holds a reference annotator's labels (an LLM judge, a
pilot's rater): the annotator becomes one of the group's judges, whose round-1 labels are
kept and compared with the consensus but never vote in the group's rounds.

Errors follow FORMATS.md section 0: a bad record is reported as `file:line: reason`,
skipped, and the rest of the file is still imported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from taxonomy.models import TaxonomyVersion, Type

from .models import (
    Annotation,
    Conversation,
    Group,
    Role,
    RoundClosed,
    SeatConflict,
    Source,
    Study,
    Turn,
)

REQUIRED_FIELDS = ("conversation", "turn", "annotator", "labels", "group")


class RecordError(ValueError):
    """One record cannot be imported; the message names the field."""


@dataclass
class ImportReport:
    imported: int = 0
    rejected: list[str] = field(default_factory=list)
    created_users: list[str] = field(default_factory=list)
    created_groups: list[str] = field(default_factory=list)
    assigned_conversations: int = 0

    def summary(self) -> str:
        parts = [f"{self.imported} records imported", f"{len(self.rejected)} rejected"]
        if self.created_users:
            parts.append(f"{len(self.created_users)} annotators created")
        if self.created_groups:
            parts.append(f"{len(self.created_groups)} groups created")
        if self.assigned_conversations:
            parts.append(f"{self.assigned_conversations} conversations assigned")
        return ", ".join(parts)


def resolve_labels(
    codes: object, types_by_code: dict[str, Type], version: TaxonomyVersion
) -> list[Type]:
    """Type codes -> types of `version`, checking each axis's selection limits. Shared by
    the importer and the API so both accept exactly the same label sets."""
    if not isinstance(codes, list):
        raise RecordError(f"labels: must be a list of type codes, got {type(codes).__name__}")
    types: list[Type] = []
    for i, code in enumerate(codes):
        if not isinstance(code, str):
            raise RecordError(f"labels[{i}]: must be a type code string, got {code!r}")
        if code not in types_by_code:
            raise RecordError(f"labels: unknown type code {code!r} for taxonomy {version}")
        if types_by_code[code] not in types:
            types.append(types_by_code[code])
    per_axis: dict[int, list[Type]] = {}
    for t in types:
        per_axis.setdefault(t.axis_id, []).append(t)
    for chosen in per_axis.values():
        axis = chosen[0].axis
        limit = axis.max_labels if axis.multi_select else 1
        if limit and len(chosen) > limit:
            codes_text = ", ".join(t.code for t in chosen)
            raise RecordError(
                f"labels: axis {axis.code!r} allows at most {limit} type(s), got {codes_text}"
            )
    return types


def read_jsonl(path: Path) -> Iterator[tuple[int, dict | None, str]]:
    """Yield (line number, record, error) one line at a time, so files of any size stream.
    Blank lines are skipped silently; a line cut off mid-record is a JSON error."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                # without its line ending, a line cut off mid-string reads as unterminated
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                yield number, None, f"not valid UTF-8 ({e.reason} at byte {e.start})"
                continue
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                yield number, None, f"bad JSON: {e.msg} (column {e.colno})"
                continue
            if not isinstance(record, dict):
                yield number, None, f"record must be a JSON object, got {type(record).__name__}"
                continue
            yield number, record, ""


def _positive_int(record: dict, key: str, default: int | None = None) -> int:
    value = record.get(key, default)
    # bool is an int in Python; `true` is never a valid round or turn
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RecordError(f"{key}: must be a positive integer, got {value!r}")
    return value


def _optional_text(record: dict, key: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordError(f"{key}: must be a string, got {type(value).__name__}")
    return value


def _confidence(record: dict) -> int | None:
    value = record.get("confidence")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise RecordError(f"confidence: must be an integer from 1 to 5 or null, got {value!r}")
    return value


def _name(record: dict, key: str) -> str:
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{key}: must be a non-empty string, got {value!r}")
    return value.strip()


class _Importer:
    """Holds the lookups of one import so each conversation, user and group is fetched
    once, however many records name it."""

    def __init__(self, study: Study, create_members: bool, judge: bool = False) -> None:
        self.study = study
        self.judge = judge
        self.version = study.taxonomy_version
        self.create_members = create_members
        self.types_by_code = self.version.types_by_code()
        self.conversations: dict[str, Conversation | str] = {}
        self.users: dict[str, object] = {}
        self.groups: dict[str, Group] = {}
        self.group_annotators: set[tuple[int, int]] = set()  # (group pk, user pk) checked
        self.assigned: set[tuple[int, int]] = set()  # (conversation pk, group pk) checked
        # records usually come grouped by conversation: keep only the last one's turns
        self.turns_of: tuple[int, dict[int, Turn]] = (0, {})
        self.report = ImportReport()

    def conversation(self, external_id: object) -> Conversation:
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        if not isinstance(external_id, str) or not external_id:
            raise RecordError(f"conversation: must be a conversation id, got {external_id!r}")
        if external_id not in self.conversations:
            found = list(
                Conversation.objects.filter(study=self.study, external_id=external_id).order_by(
                    "pk"
                )[:2]
            )
            if not found:
                self.conversations[external_id] = "unknown"
            elif len(found) > 1:
                self.conversations[external_id] = "ambiguous"
            else:
                self.conversations[external_id] = found[0]
        conversation = self.conversations[external_id]
        if conversation == "unknown":
            raise RecordError(
                f"conversation: unknown conversation id {external_id!r} in study {self.study}"
            )
        if conversation == "ambiguous":
            raise RecordError(
                f"conversation: id {external_id!r} is ambiguous: several conversations of "
                f"study {self.study} share it (WildChat hashes repeat)"
            )
        assert isinstance(conversation, Conversation)
        return conversation

    def turn(self, conversation: Conversation, index: int) -> Turn:
        if self.turns_of[0] != conversation.pk:
            turns = Turn.objects.filter(conversation=conversation).only(
                "pk", "index", "conversation_id"
            )
            self.turns_of = (conversation.pk, {t.index: t for t in turns})
        turn = self.turns_of[1].get(index)
        if turn is None:
            n = len(self.turns_of[1])
            raise RecordError(
                f"turn: {index} out of range (conversation {conversation.external_id!r} "
                f"has {n} turns)"
            )
        turn.conversation = conversation
        return turn

    def group(self, name: str) -> Group:
        if name not in self.groups:
            group = Group.objects.filter(study=self.study, name=name).first()
            if group is None:
                if not self.create_members:
                    raise RecordError(
                        f"group: unknown group {name!r} in study {self.study} "
                        "(use --create-members to create it)"
                    )
                group = Group.objects.create(study=self.study, name=name)
                self.report.created_groups.append(name)
            self.groups[name] = group
        return self.groups[name]

    def annotator(self, username: str, group: Group):
        User = get_user_model()
        if username not in self.users:
            user = User.objects.filter(username=username).first()
            if user is None:
                if not self.create_members:
                    raise RecordError(
                        f"annotator: unknown user {username!r} (use --create-members to create it)"
                    )
                user = User(username=username)
                user.set_unusable_password()
                user.save()
                self.report.created_users.append(username)
            self.users[username] = user
        user = self.users[username]
        if (group.pk, user.pk) in self.group_annotators:
            return user
        try:
            # one person labels a shared conversation in one group only
            group.check_seat(user)
        except SeatConflict as e:
            raise RecordError(f"annotator: {e}") from None
        # an annotator votes in the group's rounds, a judge (--judge) never does: one user
        # is never both in one group
        if self.judge:
            seat, role, other, other_role = (
                group.judges,
                "a judge",
                group.annotators,
                "an annotator",
            )
        else:
            seat, role, other, other_role = (
                group.annotators,
                "an annotator",
                group.judges,
                "a judge",
            )
        if other.filter(pk=user.pk).exists():
            raise RecordError(
                f"annotator: {username!r} is {other_role} of group {group.name!r}, so cannot "
                f"be {role} of it"
            )
        if not seat.filter(pk=user.pk).exists():
            if not self.create_members:
                raise RecordError(
                    f"annotator: {username!r} is not {role} of group {group.name!r} "
                    "(use --create-members to add them)"
                )
            if not self.judge:
                # get_or_create: an existing member keeps their role
                self.study.add_member(user, Role.ANNOTATOR, group.kind)
            seat.add(user)
        self.group_annotators.add((group.pk, user.pk))
        return user

    def assign(self, conversation: Conversation, group: Group) -> None:
        """A conversation not yet assigned to the record's group is assigned to it (as well
        as to any other: groups may share a conversation, each with its own rounds)."""
        if (conversation.pk, group.pk) in self.assigned:
            return
        try:
            added = Conversation.objects.filter(pk=conversation.pk).assign(group)
        except SeatConflict as e:
            raise RecordError(f"group: {e}") from None
        self.report.assigned_conversations += added
        self.assigned.add((conversation.pk, group.pk))

    def import_record(self, record: dict, seat_only: bool = False) -> None:
        """Validate and import one record; `seat_only` validates it and only seats its
        annotator in its group (the first pass of an import with --create-members)."""
        missing = [key for key in REQUIRED_FIELDS if key not in record]
        if missing:
            raise RecordError(f"{missing[0]}: missing field")
        # Validate everything that needs no writes first, so a bad record changes nothing.
        conversation = self.conversation(record["conversation"])
        turn = self.turn(conversation, _positive_int(record, "turn"))
        types = resolve_labels(record["labels"], self.types_by_code, self.version)
        round = _positive_int(record, "round", default=1)
        if self.judge and round != 1:
            raise RecordError("round: a judge's labels are round 1 only")
        note = _optional_text(record, "note")
        evidence = _optional_text(record, "evidence")
        confidence = _confidence(record)
        group_name = _name(record, "group")
        username = _name(record, "annotator")
        # Only --create-members writes before Annotation.record; keep those writes and the
        # label together so a database error leaves no half-imported record behind.
        if seat_only:
            with transaction.atomic():
                group = self.group(group_name)
                self.assign(conversation, group)
                self.annotator(username, group)
            return
        try:
            with transaction.atomic():
                group = self.group(group_name)
                self.assign(conversation, group)
                annotator = self.annotator(username, group)
                # a judge's labels never move the card: recorded, not submitted
                write = Annotation.record if self.judge else Annotation.submit
                extra = {} if self.judge else {"group": group}
                write(
                    turn=turn,
                    **extra,
                    annotator=annotator,
                    types=types,
                    round=round,
                    note=note,
                    evidence=evidence,
                    confidence=confidence,
                    source=Source.IMPORT,
                    taxonomy_version=self.version,
                )
        except RoundClosed as e:
            # the same states as labels given in the browser: a closed round refuses
            raise RecordError(f"round: {e}") from None


def import_annotations(
    study: Study, path: Path | str, create_members: bool = False, judge: bool = False
) -> ImportReport:
    """Import every valid record of a JSONL file into `study`; see the module docstring.
    Raises OSError when the file cannot be opened at all."""
    path = Path(path)
    importer = _Importer(study, create_members, judge)
    report = importer.report
    if create_members and not judge:
        # Seat every annotator the file names before any label moves a card: a group whose
        # second annotator comes later in the file must not look like a group of one (whose
        # labels are its consensus at once). Bad records are reported by the second pass.
        for _number, record, _error in read_jsonl(path):
            if record is not None:
                try:
                    importer.import_record(record, seat_only=True)
                except RecordError:
                    pass
    for number, record, error in read_jsonl(path):
        if record is None:
            report.rejected.append(f"{path}:{number}: {error}")
            continue
        try:
            importer.import_record(record)
        except RecordError as e:
            report.rejected.append(f"{path}:{number}: {e}")
            continue
        report.imported += 1
    return report
