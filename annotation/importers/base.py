"""The common model of FORMATS.md section 0, shared by every format: normalised messages and
records, the turn builder (the turn rule, written once), the per-record error and the report.

Format modules only translate one dataset record into a `Record` of `Message`s; everything
about what a turn is lives in `build_conversation`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

ROLES = ("system", "user", "assistant", "tool")

# A few hundred errors are useful in a job result; a million are not.
MAX_REPORTED = 1000
# Turn metadata key: where each piece of the reply's text falls among its parts,
# [[character offset in reply_text, number of reply_parts before it], ...]; set only when
# some part comes before some text (annotation/rendering.reply_sequence reads it).
REPLY_ORDER = "reply_order"
# Warnings kept in memory: a file where every record disagrees with its own counter must not
# grow the report without bound; the rest are only counted.
MAX_WARNINGS_KEPT = 10_000


class RecordError(Exception):
    """One record is bad: it is skipped and reported as `location: reason`, the rest of the
    file is imported. A record built from several lines or rows (a SWE-chat session) names
    the one at fault with `line`, `index` or `row`."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        index: int | None = None,
        row: int | None = None,
    ) -> None:
        super().__init__(message)
        self.line, self.index, self.row = line, index, row


@dataclass
class Message:
    role: str  # one of ROLES
    content: str = ""
    # The dataset gave no content at all (null / absent), as opposed to "".
    missing: bool = False
    # Tool calls, tool results, reasoning: shown beside the reply, never its text.
    parts: list[dict] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    # Where the content's pieces of text fall among the parts, when the log interleaves them
    # in one message (a Claude Code message: text, tool call, text): (character offset in
    # `content`, number of `parts` before it) per piece. Empty: the text comes first.
    text_at: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Record:
    """One conversation as the dataset stores it, roles already mapped."""

    external_id: str
    messages: list[Message]
    metadata: dict = field(default_factory=dict)
    # The dataset's own turn counter (WildChat / LMSYS `turn`), checked, never trusted.
    declared_turns: int | None = None
    # False when the id was made up from the file name and position (OpenAI has no ids).
    id_from_data: bool = True
    warnings: list[str] = field(default_factory=list)

    def timestamp(self, where: str, value: Any) -> Any:
        """A timestamp field as ISO-8601 UTC; an unreadable one is kept as given, with a
        warning, rather than costing the whole conversation."""
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            self.warnings.append(f"{where}: {exc}, kept as is")
            return value


@dataclass
class BuiltTurn:
    index: int
    user_text: str
    reply_text: str = ""
    reply_parts: list[dict] = field(default_factory=list)
    reply_empty: bool = False
    reply_missing: bool = True
    metadata: dict = field(default_factory=dict)
    has_reply: bool = False  # bookkeeping for the builder; not stored

    def stored(self) -> dict:
        """The fields that are columns of Turn."""
        return _columns(self, exclude={"has_reply"})


@dataclass
class BuiltConversation:
    external_id: str
    source_format: str
    source_file: str
    source_line: int | None
    location: str
    system_prompt: str
    preamble: list[dict]
    metadata: dict
    turns: list[BuiltTurn]
    check_duplicate: bool
    size: int = 0  # rough character count, to bound a batch's memory
    # False when external_id was made up from the file name and position (OpenAI has no
    # ids): the fingerprint leaves such an id out, so a renamed copy of a file is the same.
    id_from_data: bool = True
    fingerprint: str = ""  # set by the writer (fingerprint()), stored on Conversation
    key: str = ""  # set by the writer (conversation_keys.give_keys), stored on Conversation

    def stored(self) -> dict:
        """The fields that are columns of Conversation (the writer adds study, n_turns,
        created_at and import_job)."""
        exclude = {"location", "turns", "check_duplicate", "size", "id_from_data"}
        return _columns(self, exclude=exclude)

    def compute_fingerprint(self) -> str:
        """A hash of what the import read: the format, the dataset's id, the position in the
        file (line or index: WildChat ids repeat, so two identical records at two lines are
        two conversations) and the content (system prompt, preamble, every turn's user text,
        reply and reply parts). Not the file name: the same file uploaded again under
        another name has the same fingerprints, so a re-import adds nothing twice.
        Each piece is length-prefixed, so no two different records hash the same text."""
        # The pieces are joined and hashed once: the same digest as feeding them one by
        # one, without a method call a piece (this runs on every record imported).
        texts = [
            self.source_format,
            self.external_id if self.id_from_data else "",
            "" if self.source_line is None else str(self.source_line),
            self.system_prompt,
            json.dumps(self.preamble, ensure_ascii=False, sort_keys=True) if self.preamble else "",
            str(len(self.turns)),
        ]
        for turn in self.turns:
            parts = turn.reply_parts
            texts += (
                turn.user_text,
                turn.reply_text,
                json.dumps(parts, ensure_ascii=False, sort_keys=True) if parts else "",
                "m" if turn.reply_missing else "",
            )
        pieces = []
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            pieces += (b"%d:" % len(data), data)
        return hashlib.sha256(b"".join(pieces)).hexdigest()


def _columns(built, exclude: set[str]) -> dict:
    return {f.name: getattr(built, f.name) for f in fields(built) if f.name not in exclude}


def _merge_metadata(target: dict, extra: dict, prefix: str) -> None:
    """Per-turn metadata: the user message's keys win; the reply fills keys the user message
    lacks or left null (WildChat's timestamp is null on the user utterance), and a
    conflicting reply value is kept under `<prefix><key>` rather than lost."""
    for key, value in extra.items():
        if value is None:
            continue
        if target.get(key) is None:
            target[key] = value
        elif target[key] != value:
            target.setdefault(prefix + key, value)


def build_conversation(record: Record) -> tuple[str, list[dict], list[BuiltTurn], list[str]]:
    """Apply the turn rule (FORMATS.md section 0) to one record's messages.

    Returns (system_prompt, preamble, turns, warnings); raises RecordError for a record that
    gives no turn."""
    system_parts: list[str] = []
    preamble: list[dict] = []
    turns: list[BuiltTurn] = []
    warnings: list[str] = []
    current: BuiltTurn | None = None
    reply_texts: list[str] = []
    # (character offset in the reply's text, parts before it) per piece of the reply's text
    reply_order: list[list[int]] = []

    def close(turn: BuiltTurn | None) -> None:
        if turn is None:
            return
        turn.reply_text = "\n\n".join(reply_texts)
        if any(before for _, before in reply_order):
            # the reply's prose and parts interleave: the card shows them in this order
            turn.metadata[REPLY_ORDER] = reply_order
        turn.reply_missing = not turn.has_reply
        # An empty reply that did something (a tool call) is not empty.
        turn.reply_empty = turn.has_reply and not turn.reply_text.strip() and not turn.reply_parts

    for message in record.messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
        elif message.role == "user":
            if current is not None and not current.has_reply:
                # Rule 2: consecutive user messages are one user message.
                current.user_text = f"{current.user_text}\n\n{message.content}"
                _merge_metadata(current.metadata, message.metadata, "user_")
                continue
            close(current)
            reply_texts = []
            reply_order = []
            current = BuiltTurn(
                index=len(turns) + 1, user_text=message.content, metadata=dict(message.metadata)
            )
            turns.append(current)
        else:  # assistant or tool: the reply (rule 3), or preamble before any user (rule 4)
            if current is None:
                entry: dict[str, Any] = {"role": message.role, "content": message.content}
                if message.parts:
                    entry["parts"] = message.parts
                preamble.append(entry)
                continue
            current.has_reply = True
            if message.role == "assistant" and message.content:
                start = sum(len(t) + 2 for t in reply_texts)
                before = len(current.reply_parts)
                for offset, parts_before in message.text_at or [(0, 0)]:
                    reply_order.append([start + offset, before + parts_before])
                reply_texts.append(message.content)
            elif message.role == "tool" and not message.parts and message.content:
                current.reply_parts.append({"type": "tool_result", "content": message.content})
            current.reply_parts.extend(message.parts)
            _merge_metadata(current.metadata, message.metadata, "reply_")
    close(current)

    if preamble:
        warnings.append(
            f"{len(preamble)} message(s) before the first user message kept as preamble"
        )
    if not turns:
        # FORMATS.md section 0, rule 6: a conversation without a turn has no card.
        raise RecordError("no user message: nothing to sort")
    if record.declared_turns is not None and record.declared_turns != len(turns):
        warnings.append(
            f"the dataset says turn={record.declared_turns}, counted {len(turns)} turns"
        )
    warnings.extend(record.warnings)
    return "\n\n".join(system_parts), preamble, turns, warnings


def parse_timestamp(value: Any) -> str | None:
    """Timestamps of parquet datasets re-exported as JSON: ISO-8601 (`Z`, `+00:00`, pandas'
    `YYYY-MM-DD HH:MM:SS+00:00`) or epoch milliseconds (pandas/HF `to_json`'s default).
    Returns ISO-8601 in UTC; raises ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) >= 1e11 else value  # ms since 1973, else s
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat()
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return parse_timestamp(int(text))
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a timestamp: {value!r}") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)  # the datasets store UTC
        return parsed.astimezone(UTC).isoformat()
    raise ValueError(f"not a timestamp: {value!r}")


def require_list(obj: dict, key: str) -> list:
    value = obj.get(key)
    if not isinstance(value, list):
        kind = "missing" if value is None else f"a {type(value).__name__}, not a list"
        raise RecordError(f"field {key!r} is {kind}")
    return value


def require_id(obj: dict, key: str) -> str:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise RecordError(f"field {key!r} is missing or not a string")
    return str(value)


def text_content(value: Any, where: str) -> tuple[str, bool]:
    """(text, missing) for a plain-string content field."""
    if value is None:
        return "", True
    if not isinstance(value, str):
        raise RecordError(f"{where}.content is a {type(value).__name__}, not a string")
    return value, False


def role_message(
    raw: Any, where: str, roles: dict[str, str], to_text: Callable[[Any, str], tuple[str, bool]]
) -> Message:
    """A `{role, content, ...}` message (OpenAI style, WildChat, LMSYS): its role through
    `roles`, its content through `to_text`; the format adds what else it keeps."""
    if not isinstance(raw, dict):
        raise RecordError(f"{where} is a {type(raw).__name__}, not an object")
    role = roles.get(raw.get("role"))
    if role is None:
        raise RecordError(f"{where}: unknown role {raw.get('role')!r}")
    text, missing = to_text(raw.get("content"), where)
    return Message(role=role, content=text, missing=missing)


@dataclass
class ImportReport:
    """What one import did, or a dry run would do. Every record read lands in exactly one of
    four counts, so `read == conversations + rejected + dropped + already_imported`:
    imported (or would be), rejected (`errors` holds one `location: reason` line for each),
    dropped by the filter (`keep`), or already imported (its fingerprint is in the study,
    or was read earlier in the same import). A file that cannot be read at all is no record:
    it is listed in `files_not_read`. Warnings are remarks on records read (each counted
    above): a preamble kept, a turn counter that disagrees, a session's bad line left out."""

    conversations: int = 0
    turns: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: int = 0
    warnings_dropped: int = 0
    # files of a folder that were not imported: `path: why` (not a format we know, ...)
    skipped: list[str] = field(default_factory=list)
    dropped: int = 0  # refused by the import's filter (`keep`)
    dry_run: bool = False  # nothing written: the counts say what an import would do
    # records whose fingerprint the study already held (an earlier import of the same file)
    already_imported: int = 0
    read: int = 0  # records read: the sum of the four counts above
    filtered: bool = False  # a filter judged the records (its "dropped" is then shown, 0 too)
    # files given that could not be read at all: `file: why`; no record of them is counted
    files_not_read: list[str] = field(default_factory=list)

    def reject(self, location: str, reason: str) -> None:
        self.rejected += 1
        self.errors.append(f"{location}: {reason}")

    def file_error(self, name: str, reason: str) -> None:
        """A whole file could not be read; it counts as no record."""
        self.files_not_read.append(f"{name}: {reason}")

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append(f"{name}: {reason}")

    def warn(self, location: str, reason: str) -> None:
        if len(self.warnings) < MAX_WARNINGS_KEPT:
            self.warnings.append(f"{location}: {reason}")
        else:
            self.warnings_dropped += 1

    def listed_apart(self) -> list[tuple[str, list[str]]]:
        """What the import lists besides its rejected records, each list under its heading
        (the job's download, tasks.write_rejected): the files not read and the warnings."""
        sections = []
        if self.files_not_read:
            n = len(self.files_not_read)
            heading = f"Files not read ({n}): no record of them is counted above"
            sections.append((heading, self.files_not_read))
        if self.warnings:
            n = len(self.warnings) + self.warnings_dropped
            more = (
                [f"... and {self.warnings_dropped} more, not kept"] if self.warnings_dropped else []
            )
            heading = f"Warnings ({n}): remarks on records read, each counted above"
            sections.append((heading, self.warnings + more))
        return sections

    def summary_line(self) -> str:
        text = (
            f"{'Would import' if self.dry_run else 'Imported'} {self.conversations} "
            f"conversations ({self.turns} turns) "
            f"from {self.files} file(s); rejected {self.rejected} records"
        )
        if self.skipped:
            text += f"; skipped {len(self.skipped)} file(s) of no known format"
        if self.filtered or self.dropped:
            text += f"; dropped {self.dropped} by the filter"
        if self.already_imported:
            text += f"; already imported: {self.already_imported}"
        text += f"; {self.read} records read"
        if self.files_not_read:
            text += f"; {len(self.files_not_read)} file(s) could not be read"
        if self.warnings:
            text += f"; {len(self.warnings) + self.warnings_dropped} warnings"
        return text + "."

    def as_dict(self) -> dict:
        return {
            "read": self.read,
            "conversations": self.conversations,
            "turns": self.turns,
            "rejected": self.rejected,
            "already_imported": self.already_imported,
            "files": self.files,
            "dropped": self.dropped,
            "filtered": self.filtered,
            "dry_run": self.dry_run,
            "errors": self.errors[:MAX_REPORTED],
            "errors_not_shown": max(0, len(self.errors) - MAX_REPORTED),
            "files_not_read": self.files_not_read[:MAX_REPORTED],
            "files_not_read_not_shown": max(0, len(self.files_not_read) - MAX_REPORTED),
            "warnings": self.warnings[:MAX_REPORTED],
            "warnings_not_shown": max(0, len(self.warnings) - MAX_REPORTED) + self.warnings_dropped,
            "skipped": self.skipped[:MAX_REPORTED],
            "skipped_not_shown": max(0, len(self.skipped) - MAX_REPORTED),
            "summary": self.summary_line(),
        }
