"""Import annotations from JSONL (DESIGN.md, "Annotation JSONL"): one record a line,
`{"conversation": id, "turn": 1-based index, "annotator": username, "labels": [codes],
"round": 1, "group": name}` plus optional note, evidence and confidence. A record of an
episode's judgement or a session's coverage rating (annotation/importers/episode_judgements.py:
`record_kind` tells them by their keys) is imported by that module, in a pass of its own.
The conversation is named by its key or its external id (an id several conversations share
is an error naming their keys), or by "conversation_key", a key exactly (conversation_keys).

With `judge=True` (`--judge`) the file holds a reference annotator's labels (an LLM judge, a
pilot's rater): the annotator becomes one of the group's judges, whose round-1 labels are
kept and compared with the consensus but never vote in the group's rounds.

Errors follow FORMATS.md section 0: a bad record is reported as `file:line: reason`,
skipped, and the rest of the file is still imported."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from taxonomy.models import TaxonomyVersion, Type

from .. import conversation_keys
from ..db.sql import in_list, query_rows
from ..limits import check_length
from ..models import (
    Assignment,
    Conversation,
    Group,
    Job,
    JobStatus,
    Kind,
    Study,
    Turn,
)
from .episode_judgements import import_episode_records, record_kind
from .label_batch import LabelItem, write_batch
from .label_seats import LabelRecordError, Seating, record_name
from .readers import batched

REQUIRED_FIELDS = ("conversation", "turn", "annotator", "labels", "group")


@dataclass
class LabelImportReport:
    imported: int = 0
    rejected: list[str] = field(default_factory=list)
    created_users: list[str] = field(default_factory=list)
    created_groups: list[str] = field(default_factory=list)
    assigned_conversations: int = 0
    # nothing was imported, so the accounts, groups, seats and assignments the import had
    # created were removed (the lists above then name what was removed)
    removed: bool = False

    def summary(self) -> str:
        parts = [f"{self.imported} records imported", f"{len(self.rejected)} rejected"]
        done = "removed again" if self.removed else "created"
        if self.created_users:
            parts.append(f"{len(self.created_users)} annotators {done}")
        if self.created_groups:
            parts.append(f"{len(self.created_groups)} groups {done}")
        if self.assigned_conversations:
            assigned = "unassigned again" if self.removed else "assigned"
            parts.append(f"{self.assigned_conversations} conversations {assigned}")
        return ", ".join(parts)


def resolve_labels(
    codes: object, types_by_code: dict[str, Type], version: TaxonomyVersion
) -> list[Type]:
    """Type codes -> types of `version`, checking each axis's selection limits. Shared by
    the importer and the API so both accept exactly the same label sets."""
    if not isinstance(codes, list):
        raise LabelRecordError(f"labels: must be a list of type codes, got {type(codes).__name__}")
    types: list[Type] = []
    for i, code in enumerate(codes):
        if not isinstance(code, str):
            raise LabelRecordError(f"labels[{i}]: must be a type code string, got {code!r}")
        if code not in types_by_code:
            raise LabelRecordError(f"labels: unknown type code {code!r} for taxonomy {version}")
        if types_by_code[code] not in types:
            types.append(types_by_code[code])
    try:
        version.check_selection(types)
    except ValueError as e:
        raise LabelRecordError(f"labels: {e}") from None
    return types


def read_label_lines(path: Path) -> Iterator[tuple[int, dict | None, str]]:
    """Yield (line number, record, error) one line at a time, so files of any size stream.
    Blank lines are skipped silently; a line cut off mid-record is a JSON error. JSON errors,
    records nested too deeply, NUL characters, lines longer than CARDSORT_MAX_LINE_BYTES and
    a gzip file decompressing past CARDSORT_MAX_DECOMPRESSED_BYTES are reported as the
    conversation importers report them (one shared reader: containers.py)."""
    # the conversation importers' parser: both importers report a bad line alike
    from .containers import (
        GZIP_ERRORS,
        LongLine,
        gzip_error,
        line_too_long,
        lines,
        max_line_bytes,
        open_binary,
    )
    from .records import BadRecord, parse_record

    limit = max_line_bytes()
    with open_binary(path) as f:
        read = enumerate(lines(f, limit), start=1)
        number = 0
        while True:
            try:
                number, raw = next(read)
            except StopIteration:
                return
            except GZIP_ERRORS as e:
                yield number + 1, None, gzip_error(e)
                return
            if isinstance(raw, LongLine):
                yield number, None, line_too_long(limit)
                continue
            try:
                # without its line ending, a line cut off mid-string reads as unterminated
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                yield number, None, f"not valid UTF-8 ({e.reason} at byte {e.start})"
                continue
            if not text.strip():
                continue
            try:
                record = parse_record(text)
            except BadRecord as e:
                yield number, None, str(e)
                continue
            if not isinstance(record, dict):
                yield number, None, f"record must be a JSON object, got {type(record).__name__}"
                continue
            yield number, record, ""


def _positive_int(record: dict, key: str, default: int | None = None) -> int:
    value = record.get(key, default)
    # bool is an int in Python; `true` is never a valid round or turn
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LabelRecordError(f"{key}: must be a positive integer, got {value!r}")
    return value


def _optional_text(record: dict, key: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LabelRecordError(f"{key}: must be a string, got {type(value).__name__}")
    return check_length(key, value, LabelRecordError)  # "note: at most 10,000 characters"


def _confidence(record: dict) -> int | None:
    value = record.get("confidence")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise LabelRecordError(f"confidence: must be an integer from 1 to 5 or null, got {value!r}")
    return value


class _Importer:
    """One import, in two passes over the file. The first seats everyone the file names and
    assigns each conversation to the groups its records name (so a group of three is complete
    before its first card can close round 1, and a second group on an assigned conversation
    is accepted or refused before any label); the second
    writes the labels batch by batch (label_batch.write_batch). Both passes validate each
    record the same way, with the conversations and turns of a batch fetched at once."""

    def __init__(
        self,
        study: Study,
        create_members: bool,
        judge: bool = False,
        batch_size: int = 2000,
        kind: str = Kind.STUDENT,
    ) -> None:
        self.study = study
        self.judge = judge
        self.version = study.taxonomy_version
        self.create_members = create_members
        self.batch_size = batch_size
        self.types_by_code = self.version.types_by_code()
        # tuple of codes -> (type ids, codes), or why they are no label set
        self.label_sets: dict[tuple, tuple | LabelRecordError] = {}
        # the first pass's outcome, batch by batch: (records read, items, errors)
        self.checked: list[tuple[int, list[LabelItem], list[tuple[int, str]]]] = []
        self.report = LabelImportReport()
        User = get_user_model()
        self.username_field = User._meta.get_field(User.USERNAME_FIELD)
        self.group_name_field = Group._meta.get_field("name")
        # who and where the records go: accounts, groups, seats, assignments
        self.seating = Seating(study, create_members, judge, self.report, kind)
        self.episode_records = 0

    # -- reading ------------------------------------------------------------------------

    def batches(self, path: Path) -> Iterator[list[tuple[int, dict | None, str]]]:
        yield from batched(self.label_lines(path), self.batch_size)

    def label_lines(self, path: Path) -> Iterator[tuple[int, dict | None, str]]:
        for line in read_label_lines(path):
            if line[1] is not None and record_kind(line[1]) is not None:
                # an episode's judgement or a coverage rating (importers/episode_judgements.py)
                self.episode_records += 1
                continue
            yield line

    def lookups(self, records: list[dict]) -> tuple[dict, dict]:
        """The conversations ({external id: [pk]}), turns ({(conversation pk, index): turn
        pk}, with {conversation pk: turns}) and assignments ({(conversation pk, group
        name)}) the batch's records name: three queries a batch."""
        ids = {_external_id(r["conversation"]) for r in records if "conversation" in r}
        ids.discard(None)
        keys = {r["conversation_key"] for r in records if type(r.get("conversation_key")) is str}
        # "conversation": a key or a plain external id (conversation_keys.match);
        # "conversation_key": a key exactly
        names = sorted(conversation_keys.lookup_names(ids) | keys)
        rows = visible_conversation_rows(self.study, names)
        conversations = (
            conversation_keys.match(ids, rows),
            conversation_keys.match_keys(keys, rows),
        )
        pks = {found[0].pk for found in conversations[0].values() if len(found) == 1}
        pks = sorted(pks | {found.pk for found in conversations[1].values()})
        turns: dict[tuple[int, int], int] = {}
        counts: dict[int, int] = defaultdict(int)
        pks_sql, pks_param = in_list("conversation_id", pks)
        for pk, conversation_id, index in query_rows(
            f'SELECT id, conversation_id, "index" FROM "{Turn._meta.db_table}" WHERE {pks_sql}',
            pks_param,
        ):
            turns[(conversation_id, index)] = pk
            counts[conversation_id] += 1
        pks_sql, pks_param = in_list("a.conversation_id", pks)
        assigned = set(
            query_rows(
                f'SELECT a.conversation_id, g.name FROM "{Assignment._meta.db_table}" a '
                f'JOIN "{Group._meta.db_table}" g ON g.id = a.group_id WHERE {pks_sql}',
                pks_param,
            )
        )
        return conversations, {"turns": turns, "counts": counts, "assigned": assigned}

    # -- one record ---------------------------------------------------------------------

    def check(self, record: dict, conversations: tuple, turns: dict) -> LabelItem:
        """Validate a record (the order of the checks is the order of the error messages
        users see), seat its annotator and assign its conversation to its group (the only
        writes before the labels); LabelRecordError when it cannot be imported."""
        # "conversation_key" may stand for "conversation"
        missing = [
            key
            for key in REQUIRED_FIELDS
            if key not in record and (key != "conversation" or "conversation_key" not in record)
        ]
        if missing:
            raise LabelRecordError(f"{missing[0]}: missing field")
        external_id = None
        if "conversation" in record:
            external_id = _external_id(record["conversation"])
            if external_id is None:
                raise LabelRecordError(
                    f"conversation: must be a conversation id, got {record['conversation']!r}"
                )
        try:
            conversation = conversation_keys.one(
                external_id,
                record.get("conversation_key"),
                *conversations,
                unknown=f"unknown conversation id {{!r}} in study {self.study}",
            )
        except ValueError as e:
            raise LabelRecordError(str(e)) from None
        conversation_id = conversation.pk
        index = _positive_int(record, "turn")
        turn_id = turns["turns"].get((conversation_id, index))
        if turn_id is None:
            raise LabelRecordError(
                f"turn: {index} out of range (conversation {conversation.key!r} "
                f"has {turns['counts'][conversation_id]} turns)"
            )
        type_ids, codes = self.labels(record["labels"])
        round = _positive_int(record, "round", default=1)
        if self.judge and round != 1:
            raise LabelRecordError("round: a judge's labels are round 1 only")
        note = _optional_text(record, "note")
        evidence = _optional_text(record, "evidence")
        confidence = _confidence(record)
        group_name = record_name(record["group"], "group", self.group_name_field)
        username = record_name(record["annotator"], "annotator", self.username_field)
        user = self.seating.seat(group_name, username)
        if (conversation_id, group_name) not in turns["assigned"]:
            self.seating.assign(conversation_id, group_name)
        return LabelItem(
            number=0,
            turn_id=turn_id,
            group_id=self.seating.groups[group_name].pk,
            annotator_id=user.pk,
            round=round,
            type_ids=type_ids,
            codes=codes,
            note=note,
            evidence=evidence,
            confidence=confidence,
        )

    def labels(self, codes: object) -> tuple[tuple[int, ...], frozenset[str]]:
        """resolve_labels, once per distinct list of codes (a file repeats a few)."""
        key = tuple(codes) if type(codes) is list and all(type(c) is str for c in codes) else None
        found = self.label_sets.get(key) if key is not None else None
        if found is None:
            try:
                types = resolve_labels(codes, self.types_by_code, self.version)
                found = (tuple(t.pk for t in types), frozenset(t.code for t in types))
            except LabelRecordError as e:
                found = e
            if key is not None:
                self.label_sets[key] = found
        if isinstance(found, LabelRecordError):
            raise LabelRecordError(str(found))
        return found

    # -- the two passes -----------------------------------------------------------------

    def check_batch(
        self, batch: list[tuple[int, dict | None, str]], path: Path
    ) -> tuple[list[LabelItem], list[tuple[int, str]]]:
        records = [record for _, record, _ in batch if record is not None]
        conversations, turns = self.lookups(records)
        self.seating.new_batch(turns["assigned"])
        items, errors = [], []
        for number, record, error in batch:
            if record is None:
                errors.append((number, error))
                continue
            try:
                item = self.check(record, conversations, turns)
            except LabelRecordError as e:
                errors.append((number, str(e)))
                continue
            item.number = number
            items.append(item)
        self.seating.write_pending()
        return items, errors

    def seat_everyone(self, path: Path) -> int:
        """First pass: validate every record, seat its annotator and assign its conversation
        to its group, keeping what each batch's records became for the second pass (which
        would find the same: seats and assignments are decided once per pair). Returns how
        many lines hold a record (the second pass's total)."""
        total = 0
        for batch in self.batches(path):
            items, errors = self.check_batch(batch, path)
            self.checked.append((len(batch), items, errors))
            total += len(batch)
        return total

    def write(self, path: Path, total: int, progress) -> None:
        """Second pass: everyone is seated; write the labels batch by batch."""
        done = 0
        for read, items, errors in self.checked:
            errors += write_batch(self.study, items, judge=self.judge)
            refused = {number for number, _ in errors}
            self.report.imported += sum(1 for item in items if item.number not in refused)
            self.report.rejected += [f"{path}:{n}: {e}" for n, e in sorted(errors)]
            done += read
            if progress is not None:
                progress(done, total)
        self.checked = []


def _external_id(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        return None
    return value


def import_annotations(
    study: Study,
    path: Path | str,
    create_members: bool = False,
    judge: bool = False,
    *,
    kind: str = Kind.STUDENT,
    batch_size: int = 2000,
    progress: Callable[[int, int], None] | None = None,
) -> LabelImportReport:
    """Import every valid record of a JSONL file into `study`; see the module docstring.
    `progress(records read, records in the file)` is called after each batch. Raises
    OSError when the file cannot be opened at all."""
    path = Path(path)
    importer = _Importer(study, create_members, judge, batch_size=batch_size, kind=kind)
    # the first pass in one transaction: should it fail, no account, group, seat or
    # assignment of it stays
    with transaction.atomic():
        total = importer.seat_everyone(path)
    try:
        importer.write(path, total, progress)
    except BaseException:
        # batches commit as they go: once a label landed, what it was decided with stays
        # (importing the file again finishes the import, duplicating nothing)
        if importer.report.imported == 0:
            importer.seating.created.remove(study)
        raise
    if importer.episode_records:
        # the file's episode judgements and coverage ratings, in a pass of their own
        import_episode_records(
            study,
            path,
            importer.report,
            lambda: read_label_lines(path),
            create_members=create_members,
            judge=judge,
            kind=kind,
        )
    if importer.report.imported == 0:
        importer.seating.created.remove(study)
        importer.report.removed = True
    return importer.report


def visible_conversation_rows(study, names, columns: str = "") -> list[tuple]:
    """(id, external_id, key[, columns...]) of the study's visible conversations whose
    external id or key is one of `names`: one query with an array parameter (not one ORM
    lookup a name); not the conversations of an import job that is not done
    (ConversationQuerySet.visible)."""
    names = sorted(names)
    ids_sql, ids_param = in_list("external_id", names, "text")
    keys_sql, keys_param = in_list('"key"', names, "text")
    unfinished = (
        f'SELECT 1 FROM "{Job._meta.db_table}" j WHERE j.id = import_job_id AND j.status <> %s'
    )
    return query_rows(
        f'SELECT id, external_id, "key"{columns} FROM "{Conversation._meta.db_table}" '
        f"WHERE study_id = %s AND ({ids_sql} OR {keys_sql}) AND NOT EXISTS ({unfinished})",
        [study.pk, *ids_param, *keys_param, JobStatus.DONE],
    )
