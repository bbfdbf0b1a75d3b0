"""Import an extractor's episodes (`import_episodes SLUG FILE [--run NAME] [--min-confidence
X]`): JSONL, one episode a line:

    {"conversation": id or key, "first_turn": 2, "last_turn": 4, "goal": "...",
     "confidence": 0.8, "evidence": [{"turn": 3, "part": "reply", "quote": "..."}],
     "labels": {"symptom": ["scope_overreach"]}, "valid": false,
     "invalid_reason": "normative_prior_bias"}

`conversation` names the conversation as the label import does (its key or external id);
turns are 1-based positions (Turn.index); `part` is user, reply, thinking, tool_call or
tool_result (annotation/episodes/parts.py), with an optional `part_index` (the reply part's
position in the turn's reply parts, 0-based; without it the first part of that kind holding
the quote). Each quote is located in the stored text, exactly, else with white space
normalised (the span maps back to the stored text). `labels`, `valid` and `invalid_reason`
are the run's own verdict and labels (a validator's), kept on the episode as the run's.

A quote not found is reported (`file:line: evidence[2]: quote not found in turn 5 reply`)
and the episode kept without it, unless none of its quotes is found: then it is rejected.
An episode under the minimum confidence is counted as dropped, not imported. A bad line is
reported naming the file, line and field, and rejected; the rest is imported. The whole
import is one transaction: it fails whole (nothing of it stays) or lands whole, with the run
(ExtractionRun) and its counts. The file is read as a stream, a batch at a time, so memory is
bounded by the batch size."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from .. import conversation_keys
from ..db.episodes import insert_episodes
from ..db.sql import in_list, json_as_text, query_rows
from ..episodes.labels import axes_of, check_labels
from ..episodes.parts import PARTS, REPLY_PART_KINDS, find_quote, texts_of
from ..episodes.reasons import check_reason
from ..models import (
    ExtractionRun,
    Study,
    Turn,
)
from .annotations import read_label_lines, visible_conversation_rows
from .readers import batched

MAX_GOAL = 10_000
COUNT_KEYS = ("read", "imported", "dropped_confidence", "rejected", "quotes_missing")


class EpisodeImportError(ValueError):
    """The import cannot start (a bad option, a run name taken): nothing was written."""


class _Bad(ValueError):
    """One line cannot be imported; the message starts with the field."""


@dataclass
class EpisodeImportReport:
    run: ExtractionRun | None = None
    counts: dict = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    # `file:line: ...` for every rejected line and every quote not found, in file order
    messages: list[str] = field(default_factory=list)
    # nothing was imported and some lines were refused: the run was not kept
    removed: bool = False

    def summary(self) -> str:
        c = self.counts
        name = self.run.name if self.run else "?"
        kept = "not kept: nothing imported" if self.removed else "kept"
        return (
            f"run {name} ({kept}): {c['read']} episodes read, {c['imported']} imported, "
            f"{c['dropped_confidence']} dropped for confidence, {c['rejected']} rejected, "
            f"{c['quotes_missing']} quotes not found"
        )


@dataclass
class _Item:
    line: int
    episode: dict  # Episode's columns
    quotes: list[tuple]  # (turn pk, part, part index, start, end, quote, order)


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Bad(f"{where}: must be a positive integer, got {value!r}")
    return value


def _name(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and value else None


Line = tuple[int, dict | None, str]  # (line number, parsed record or None, why not parsed)


class _Importer:
    """Parsed records -> episodes of `run`: the file import and the llm-extract judge's
    answers both come through here (`where` names their origin in the messages: a file's
    path, or a conversation's model answer)."""

    def __init__(self, study: Study, where: str, run: ExtractionRun, min_confidence, batch_size):
        self.study, self.path, self.run = study, where, run
        self.min_confidence = min_confidence
        self.batch_size = batch_size
        self.axes = axes_of(study.taxonomy_version)
        self.report = EpisodeImportReport(run=run)

    def batches(self, lines: Iterable[Line]) -> Iterator[list[Line]]:
        yield from batched(lines, self.batch_size)

    def run_batch(self, batch) -> None:
        records = [r for _, r, _ in batch if r is not None]
        names = {_name(r.get("conversation")) for r in records} - {None}
        found, n_turns = self.conversations_named(names)
        wanted = {}
        for r in records:
            hit = found.get(_name(r.get("conversation")) or "")
            if hit and len(hit) == 1 and isinstance(r.get("evidence"), list):
                for e in r["evidence"]:
                    if isinstance(e, dict) and type(e.get("turn")) is int:
                        wanted.setdefault(hit[0].pk, set()).add(e["turn"])
        turns = self.turns(wanted)
        items: list[_Item] = []
        counts = self.report.counts
        for number, record, error in batch:
            counts["read"] += 1
            where = f"{self.path}:{number}"
            if record is None:
                self.reject(where, error)
                continue
            try:
                item = self.check(record, found, n_turns, turns, where)
            except _Bad as e:
                self.reject(where, str(e))
                continue
            if item is None:
                counts["dropped_confidence"] += 1
                continue
            item.line = number
            items.append(item)
        self.write(items)

    def conversations_named(self, names: set[str]) -> tuple[dict, dict[int, int]]:
        """What each name names (conversation_keys.match: a key or an external id) among
        the study's visible conversations, and their turn counts: one query, with the
        label import's SQL (an array parameter, not 2,000 ORM lookups)."""
        wanted = conversation_keys.lookup_names(names)
        rows = visible_conversation_rows(self.study, wanted, ", n_turns")
        found = conversation_keys.match(names, [row[:3] for row in rows])
        return found, {row[0]: row[3] for row in rows}

    def reject(self, where: str, why: str) -> None:
        self.report.counts["rejected"] += 1
        self.report.messages.append(f"{where}: {why}")

    def turns(self, wanted: dict[int, set[int]]) -> dict[tuple[int, int], list]:
        """{(conversation pk, index): [turn pk, user text, reply text, reply parts]} of the
        turns the batch's quotes name: one query. The reply parts come as JSON text, parsed
        when a quote needs them (locate)."""
        if not wanted:
            return {}
        indexes = sorted(set().union(*wanted.values()))
        conversations_sql, conversations_param = in_list("conversation_id", sorted(wanted))
        indexes_sql, indexes_param = in_list('"index"', indexes, "integer")
        parts = json_as_text("reply_parts")
        rows = query_rows(
            f'SELECT id, conversation_id, "index", user_text, reply_text, {parts} '
            f'FROM "{Turn._meta.db_table}" WHERE {conversations_sql} AND {indexes_sql}',
            [*conversations_param, *indexes_param],
        )
        return {(c, i): [pk, u, r, p] for pk, c, i, u, r, p in rows if i in wanted[c]}

    def check(self, record: dict, found, n_turns, turns, where: str) -> _Item | None:
        for key in ("conversation", "first_turn", "last_turn", "confidence", "evidence"):
            if key not in record:
                raise _Bad(f"{key}: missing field")
        name = _name(record["conversation"])
        if name is None:
            raise _Bad(f"conversation: must be a conversation id, got {record['conversation']!r}")
        try:
            conversation = conversation_keys.one(
                name,
                None,
                found,
                {},
                unknown=f"unknown conversation id {{!r}} in study {self.study}",
            )
        except ValueError as e:
            raise _Bad(str(e)) from None
        n = n_turns[conversation.pk]
        first = _int(record["first_turn"], "first_turn")
        last = _int(record["last_turn"], "last_turn")
        if last < first:
            raise _Bad(f"last_turn: {last} is before first_turn {first}")
        if last > n:
            raise _Bad(
                f"last_turn: {last} out of range (conversation {conversation.key!r} has {n} turns)"
            )
        goal = record.get("goal", "")
        if not isinstance(goal, str):
            raise _Bad(f"goal: must be a string, got {type(goal).__name__}")
        if len(goal) > MAX_GOAL:
            raise _Bad(f"goal: at most {MAX_GOAL:,} characters, got {len(goal):,}")
        confidence = record["confidence"]
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not 0.0 <= confidence <= 1.0
        ):
            raise _Bad(f"confidence: must be a number from 0 to 1, got {confidence!r}")
        valid = record.get("valid")
        if valid is not None and not isinstance(valid, bool):
            raise _Bad(f"valid: must be true, false or null, got {valid!r}")
        try:
            reason = check_reason(valid, record.get("invalid_reason"))
            labels = check_labels(record.get("labels"), self.axes)
        except ValueError as e:
            raise _Bad(str(e)) from None
        evidence = record["evidence"]
        if not isinstance(evidence, list) or not evidence:
            raise _Bad("evidence: must be a non-empty list of {turn, part, quote}")
        specs = [self.evidence_spec(e, i, n) for i, e in enumerate(evidence)]
        if self.min_confidence is not None and confidence < self.min_confidence:
            return None
        episode = {
            "conversation_id": conversation.pk,
            "first_turn": first,
            "last_turn": last,
            "goal": goal,
            "confidence": float(confidence),
            "run_valid": valid,
            "run_invalid_reason": reason,
            "run_labels": labels,
        }
        quotes = []
        for i, (index, part, part_index, quote) in enumerate(specs):
            turn = turns.get((conversation.pk, index))
            if turn is None:  # the count says more turns than are stored
                raise _Bad(f"evidence[{i}].turn: turn {index} is not stored")
            located = self.locate(turn, part, part_index, quote)
            if located is None:
                self.report.counts["quotes_missing"] += 1
                self.report.messages.append(
                    f"{where}: evidence[{i}]: quote not found in turn {index} "
                    f"{part.replace('_', ' ')}"
                    + (f" {part_index}" if part_index is not None else "")
                )
                continue
            turn_pk, found_index, start, end, text = located
            quotes.append((turn_pk, part, found_index, start, end, text, i))
        if not quotes:
            raise _Bad(f"evidence: none of its {len(specs)} quote(s) found; episode rejected")
        return _Item(0, episode, quotes)

    def evidence_spec(self, entry: object, i: int, n: int) -> tuple:
        at = f"evidence[{i}]"
        if not isinstance(entry, dict):
            raise _Bad(f"{at}: must be an object {{turn, part, quote}}, got {entry!r}")
        for key in ("turn", "part", "quote"):
            if key not in entry:
                raise _Bad(f"{at}.{key}: missing field")
        index = _int(entry["turn"], f"{at}.turn")
        if index > n:
            raise _Bad(f"{at}.turn: {index} out of range (the conversation has {n} turns)")
        part = entry["part"]
        if part not in PARTS:
            raise _Bad(f"{at}.part: must be one of {', '.join(PARTS)}, got {part!r}")
        quote = entry["quote"]
        if not isinstance(quote, str) or not quote.strip():
            raise _Bad(f"{at}.quote: must be a non-empty string, got {quote!r}")
        part_index = entry.get("part_index")
        if part_index is not None:
            if part in ("user", "reply"):
                raise _Bad(f"{at}.part_index: only for a reply part (thinking, tool call/result)")
            if isinstance(part_index, bool) or not isinstance(part_index, int) or part_index < 0:
                raise _Bad(f"{at}.part_index: must be an integer >= 0, got {part_index!r}")
        return index, part, part_index, quote

    @staticmethod
    def locate(turn: list, part: str, part_index, quote: str):
        """(turn pk, part index, start, end, stored text of the span) or None."""
        turn_pk, user_text, reply_text, reply_parts = turn[:4]
        if part in REPLY_PART_KINDS and isinstance(reply_parts, str):
            turn[3] = reply_parts = json.loads(reply_parts)  # once a turn
        if len(turn) == 4:
            turn.append({})  # the texts of its parts, by kind, computed once a turn
        texts = turn[4].get(part)
        if texts is None:
            texts = turn[4][part] = texts_of(part, user_text, reply_text, reply_parts)
        for index, text in texts:
            if part_index is not None and index != part_index:
                continue
            span = find_quote(text, quote)
            if span is not None:
                return turn_pk, index, span[0], span[1], text[span[0] : span[1]]
        return None

    def write(self, items: list[_Item]) -> None:
        rows = [(item.line, item.episode, item.quotes) for item in items]
        insert_episodes(self.run.pk, rows, timezone.now())
        self.report.counts["imported"] += len(items)


def add_episode_records(
    run: ExtractionRun,
    lines: Iterable[Line],
    *,
    where: str,
    min_confidence: float | None = None,
    batch_size: int = 2000,
    progress: Callable[[int], None] | None = None,
) -> EpisodeImportReport:
    """Parsed records (line number, record or None, why not) written as episodes of `run`,
    checked as the module docstring says (quotes located, low confidence dropped, bad ones
    rejected, each counted); the run's counts grow by this call's and are saved. The one
    path of the file import and of the llm-extract judge (annotation/actions/judges.py);
    the caller holds the transaction."""
    importer = _Importer(run.study, where, run, min_confidence, batch_size)
    for batch in importer.batches(lines):
        importer.run_batch(batch)
        if progress is not None:
            progress(importer.report.counts["read"])
    report = importer.report
    run.counts = {k: run.counts.get(k, 0) + report.counts[k] for k in COUNT_KEYS}
    run.save(update_fields=["counts"])
    return report


def import_episodes(
    study: Study,
    path: Path | str,
    run_name: str | None = None,
    *,
    min_confidence: float | None = None,
    source: str = "",
    parameters: dict | None = None,
    batch_size: int = 2000,
    progress: Callable[[int], None] | None = None,
) -> EpisodeImportReport:
    """Import an extractor's JSONL into `study` as the run `run_name` (default: the file's
    name without extensions); see the module docstring. EpisodeImportError when the import
    cannot start; OSError when the file cannot be read."""
    path = Path(path)
    name = (run_name or path.name.split(".")[0]).strip()
    if not name or len(name) > 100:
        raise EpisodeImportError(f"--run: a name of 1 to 100 characters, got {name!r}")
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise EpisodeImportError(f"--min-confidence: must be from 0 to 1, got {min_confidence}")
    if ExtractionRun.objects.filter(study=study, name=name).exists():
        raise EpisodeImportError(
            f"study {study.slug} already has a run named {name!r}; name this one with --run"
        )
    if not path.is_file():
        raise OSError(f"no such file: {path}")
    params = dict(parameters or {})
    params.update({"file": path.name, "min_confidence": min_confidence})
    with transaction.atomic():
        run = ExtractionRun.objects.create(study=study, name=name, source=source, parameters=params)
        report = add_episode_records(
            run,
            read_label_lines(path),
            where=str(path),
            min_confidence=min_confidence,
            batch_size=batch_size,
            progress=progress,
        )
        if report.counts["imported"] == 0 and report.counts["rejected"]:
            # nothing of a file whose every line was refused stays, not even its run
            transaction.set_rollback(True)
            report.removed = True
    return report
