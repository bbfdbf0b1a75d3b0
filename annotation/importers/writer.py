"""Batched writes of imported conversations and their turns, one transaction per batch.

SQLite gets `bulk_create`. PostgreSQL gets `COPY ... FROM STDIN` (psycopg2 `copy_expert`),
several times faster than multi-row INSERTs for the same rows (benchmarks/import_bench.py).
A batch the database refuses is retried record by record, so one bad row costs that record,
not the batch or the file. (NUL characters, which PostgreSQL refuses and SQLite stores, never
get here: the readers reject them, so both databases hold the same records.)

Re-importing adds nothing twice: every conversation carries a fingerprint of what was read
(BuiltConversation.compute_fingerprint), and a batch first drops the records whose
fingerprint the study already holds, with one indexed query per batch (the (study,
fingerprint) index), so nothing grows in memory with the file. They are counted as
"already imported", except those the same job wrote on an earlier run (a resumed job after
its worker was lost), which count as its own imports. Then the duplicate ids, then the
filter (`keep`): memory.py says why in this order, and what the import remembers beside
the database (a dry run: what it would have written).

Every conversation also carries the job that wrote it (`import_job`): until that job is done
it is invisible (ConversationQuerySet.visible), and a failed job's rows are deleted by it.

On PostgreSQL (COPY, not a dry run, not inside a transaction) a writer thread with its own
connection sends batch N while the reading thread reads and builds batch N+1: the server
works on the other core. Before a batch is checked, the one in flight is waited for, so the
fingerprint and duplicate checks see every earlier batch in the database; the thread's
refused rows are retried record by record there and counted by the reading thread; its
error fails the import (raised at the next flush); progress reports what is written.

Both per-batch lookups are planned by PostgreSQL on the table's statistics. A table filled
faster than autovacuum analyses it (or with autovacuum off) is planned as if the study held
a few rows, on the study_id index: each lookup then reads every row of the study, and an
import of 1,000,000 conversations becomes quadratic (1 s a batch at 1M). The writer runs
ANALYZE on the conversation table before its first lookup and whenever what it wrote has
doubled since (from ANALYZE_FROM rows on): about 0.5 s at 1M rows, eight times in all."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import orjson
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from annotation.db.options import WriterOptions
from annotation.db.sql import analyze, copy_data, copy_text, next_ids, planner_statistics_kept
from annotation.models import Conversation, Study, Turn

from .base import BuiltConversation, ImportReport
from .memory import ImportMemory

BATCH_SIZE = 1000
# A batch is also cut at this many characters of content, so a file of very long
# conversations does not hold a thousand of them in memory.
BATCH_CHARS = 16_000_000
# What a refused row raises: the database's errors, and psycopg2's ValueError for a NUL
# character in a parameter, which it refuses before sending (the readers reject NULs, so
# this is the last line of defence).
REFUSED = (DatabaseError, ValueError)
# PostgreSQL: ANALYZE again once this many rows are written, then at every doubling.
ANALYZE_FROM = 5000


class Writer:
    def __init__(
        self,
        study: Study,
        report: ImportReport,
        batch_size: int | None = None,
        options: WriterOptions | None = None,
        on_flush: Callable[[], None] | None = None,
        dry_run: bool = False,
        job=None,
        keep: Callable[[BuiltConversation], bool] | None = None,
        metadata: dict | None = None,
    ) -> None:
        self.study = study
        # set on every conversation, over what its log says (the lead's --modality, --tool)
        self.metadata = metadata or {}
        self.job = job
        self.keep = keep
        self.dry_run = dry_run
        self.memory = ImportMemory(job, dry_run)  # what the database does not hold
        self.report = report
        self.batch_size = batch_size or BATCH_SIZE
        # COPY, its writer thread, the fingerprint check: db/options.py, once per connection
        self.options = options if options is not None else WriterOptions.for_connection()
        self.use_copy = self.options.copy
        self.on_flush = on_flush
        # the thread needs a second connection that sees the study: not for a dry run, nor
        # inside a transaction (a TestCase)
        self.threaded = self.options.thread and not dry_run and not connection.in_atomic_block
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: tuple[Future, int] | None = None  # the batch's future, its mark
        # progress: import_files sets `mark` (bytes read) as it reads; `written` is the mark
        # of the last batch in the database, what on_flush reports
        self.mark = 0
        self.written = 0
        self.pending: list[BuiltConversation] = []
        self.pending_chars = 0
        # file name -> "jsonl" | "array" | "parquet", to name the first of two duplicate records
        self.containers: dict[str, str] = {}
        # the next ANALYZE: before the first lookup (0), then at ANALYZE_FROM rows written
        # and at every doubling; None where it is not needed (SQLite, a dry run)
        self.analyze_at: int | None = 0 if planner_statistics_kept() and not dry_run else None

    def add(self, conversation: BuiltConversation) -> None:
        if self.metadata:
            conversation.metadata = {**(conversation.metadata or {}), **self.metadata}
        self.pending.append(conversation)
        self.pending_chars += conversation.size
        if len(self.pending) >= self.batch_size or self.pending_chars >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        batch, self.pending, self.pending_chars = self.pending, [], 0
        mark = self.mark
        # The batch in flight is in the database before this one is checked against it, so
        # the fingerprint and duplicate checks see every earlier batch, as without a thread.
        self.wait()
        self._refresh_statistics()
        if self.options.check_fingerprints:
            batch = self._skip_imported(batch)
        batch = self._drop_duplicates(batch)
        batch = self.memory.screen(batch, self.keep, self.report)
        if batch and not self.dry_run:  # every earlier batch is in: the next free keys
            self.study.conversations.give_keys(batch)
        if batch and self.dry_run:
            self._count(batch)
            self.memory.written(batch)
        elif batch and self.threaded:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="import-writer")
            # The COPY text is built here, so the writer thread mostly waits on the server
            # (Python code in either thread holds the same interpreter lock).
            try:
                payload = self._copy_payload(batch)
            except REFUSED:  # text the database cannot take: the thread finds which record
                payload = None
            self._in_flight = (self._pool.submit(self._write_batch, batch, payload), mark)
            return  # wait() applies its outcome and reports its progress
        elif batch:
            self._apply(self._write_batch(batch))
        self._written(mark)

    def wait(self) -> None:
        """Wait for the batch in flight (if any), count it and report its progress. An
        exception the writer thread raised is raised here: it fails the import."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            future, mark = in_flight
            self._apply(future.result())
            self._written(mark)

    def close(self, failed: bool = False) -> None:
        """Wait for the batch in flight and stop the writer thread, closing its connection.
        Called when the import ends, also when it `failed`: then the batch in flight is
        waited for, so that nothing is written after the failure (and a failed job's
        clean-up finds every row it wrote), and an error of its own is not raised over the
        first one."""
        if self._pool is None:
            return
        try:
            if failed and self._in_flight is not None:
                self._in_flight[0].exception()  # waits; the first error is what counts
                self._in_flight = None
            self.wait()
        finally:
            self._pool.submit(_close_connection).result()
            self._pool.shutdown()
            self._pool = None

    def _written(self, mark: int) -> None:
        self.written = max(self.written, mark)
        if self.on_flush is not None:
            self.on_flush()

    # re-imports and duplicates ------------------------------------------------------------

    def _refresh_statistics(self) -> None:
        """ANALYZE the conversation table when due (the module's docstring says why). A
        database user who may not ANALYZE it gets the planner's guess, as before."""
        written = self.report.conversations
        if self.analyze_at is None or written < self.analyze_at:
            return
        self.analyze_at = max(ANALYZE_FROM, 2 * written)
        try:
            analyze(Conversation._meta.db_table)
        except DatabaseError:
            self.analyze_at = None

    def _skip_imported(self, batch: list[BuiltConversation]) -> list[BuiltConversation]:
        """Drop the records the study already holds (same fingerprint): one query per batch
        over the (study, fingerprint) index."""
        for conversation in batch:
            conversation.fingerprint = conversation.compute_fingerprint()
        found = {
            fingerprint: (job_id, n_turns, pk)
            for fingerprint, job_id, n_turns, pk in imported(
                self.study, {c.fingerprint for c in batch}
            )
        }
        kept = []
        for conversation in batch:
            earlier = found.get(conversation.fingerprint)
            if earlier is None and self.memory.would_have_written(conversation.fingerprint):
                earlier = (None, 0, None)
            if earlier is None:
                found[conversation.fingerprint] = (None, len(conversation.turns), None)
                kept.append(conversation)
            elif self.memory.earlier_run(earlier[0], earlier[2]):
                # written by this job before its worker was lost: resumed, not new (the
                # filter judges it again, so that its report counts what the job imported)
                self.report.conversations += 1
                self.report.turns += earlier[1]
                if self.keep is not None:
                    self.keep(conversation)
            else:
                self.report.already_imported += 1
        return kept

    def _location(self, source_file: str, source_line: int | None, external_id: str) -> str:
        """Where an earlier record with this id was read, named as the import names it
        (`file:line`, or `file[index] (id=...)`), whether it is in this batch or stored."""
        if source_line is None:
            return source_file  # a file that is one conversation (SpecStory, agent logs)
        container = self.containers.get(source_file)
        if container is None:
            container = "array" if source_file.lower().endswith(".json") else "jsonl"
        if container in ("array", "object"):
            return f"{source_file}[{source_line}] (id={external_id})"
        if container == "parquet":
            return f"{source_file} row {source_line} (id={external_id})"
        return f"{source_file}:{source_line}"

    def _drop_duplicates(self, batch: list[BuiltConversation]) -> list[BuiltConversation]:
        """Keep the first record of an id the format documents as unique; reject the later
        ones naming both places. Earlier batches and earlier imports are in the database;
        the ids it does not hold (the filter dropped them; a dry run's) are in memory.py."""
        checked = [c for c in batch if c.check_duplicate]
        if not checked:
            return batch
        first: dict[str, str] = {}
        ids = {c.external_id for c in checked}
        for external_id, source_file, source_line in earlier_ids(self.study, ids):
            first.setdefault(external_id, self._location(source_file, source_line, external_id))
        again = self.memory.first_read(checked, first)  # after the database's: those came first
        kept = []
        for conversation in batch:
            if conversation.check_duplicate and conversation.fingerprint not in again:
                earlier = first.get(conversation.external_id)
                if earlier is not None:
                    self.report.reject(
                        conversation.location,
                        f"duplicate id {conversation.external_id!r} (first seen at {earlier})",
                    )
                    continue
                first[conversation.external_id] = conversation.location
                self.memory.claim(conversation)
            kept.append(conversation)
        return kept

    # writing -----------------------------------------------------------------------------

    def _count(self, batch: list[BuiltConversation]) -> None:
        self.report.conversations += len(batch)
        self.report.turns += sum(len(c.turns) for c in batch)

    def _apply(self, outcome: tuple[list[BuiltConversation], list[tuple[str, str]]]) -> None:
        written, refused = outcome
        self._count(written)
        for location, reason in refused:
            self.report.reject(location, reason)

    def _write_batch(
        self, batch: list[BuiltConversation], payload: tuple[bytes, bytes] | None = None
    ) -> tuple[list[BuiltConversation], list[tuple[str, str]]]:
        """Write a batch in one transaction (its COPY `payload` if built already), or record
        by record if the database refuses it. Returns (written, [(location, reason)
        refused]) and leaves the report alone: in the writer thread, the reading thread is
        adding to it."""
        try:
            with transaction.atomic():
                if payload is None:
                    self._write(batch)
                else:
                    self._copy(*payload)
            return batch, []
        except REFUSED:
            return self._write_one_by_one(batch)

    def _write_one_by_one(
        self, batch: list[BuiltConversation]
    ) -> tuple[list[BuiltConversation], list[tuple[str, str]]]:
        written, refused = [], []
        for conversation in batch:
            try:
                self._write_one(conversation)
                written.append(conversation)
            except REFUSED as exc:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                refused.append((conversation.location, f"the database refused it: {reason}"))
        return written, refused

    def _write_one(self, conversation: BuiltConversation) -> None:
        """Write one record; if its key was taken meanwhile (another import into the study),
        again with the next free key."""
        try:
            with transaction.atomic():
                self._write([conversation])
        except REFUSED:
            conversations = self.study.conversations
            if not conversations.filter(key=conversation.key).exists():
                raise
            conversation.key = ""
            conversations.give_keys([conversation])
            with transaction.atomic():
                self._write([conversation])

    def _write(self, batch: list[BuiltConversation]) -> None:
        if self.use_copy:
            self._write_copy(batch)
        else:
            self._write_orm(batch)

    def _write_orm(self, batch: list[BuiltConversation]) -> None:
        now = timezone.now()
        rows = Conversation.objects.bulk_create(
            Conversation(
                study=self.study,
                n_turns=len(c.turns),
                created_at=now,
                import_job=self.job,
                **c.stored(),
            )
            for c in batch
        )
        Turn.objects.bulk_create(
            Turn(conversation_id=row.pk, **t.stored())
            for row, c in zip(rows, batch, strict=True)
            for t in c.turns
        )

    def _write_copy(self, batch: list[BuiltConversation]) -> None:
        self._copy(*self._copy_payload(batch))

    def _copy(self, conversations: bytes, turns: bytes) -> None:
        copy_data(
            Conversation._meta.db_table,
            "id, study_id, external_id, source_format, source_file, source_line, "
            "system_prompt, preamble, metadata, n_turns, created_at, fingerprint, import_job_id, "
            "key",
            conversations,
        )
        copy_data(
            Turn._meta.db_table,
            'conversation_id, "index", user_text, reply_text, reply_parts, reply_empty, '
            "reply_missing, metadata",
            turns,
        )

    def _copy_payload(self, batch: list[BuiltConversation]) -> tuple[bytes, bytes]:
        """The batch's rows as COPY text, encoded: (conversations, turns). Takes the ids
        from the sequence, so the turns can name their conversation."""
        now = timezone.now().isoformat()
        # ids first, so the turns can point at their conversation in the same COPY pass
        ids = next_ids(Conversation._meta.db_table, len(batch))
        conversations, turns = [], []
        study_id = str(self.study.pk)
        job_id = str(self.job.pk) if self.job is not None else r"\N"
        for pk, c in zip(ids, batch, strict=True):
            pk = str(pk)
            line = "" if c.source_line is None else str(c.source_line)
            conversations.append(
                "\t".join(
                    (
                        pk,
                        study_id,
                        copy_text(c.external_id),
                        copy_text(c.source_format),
                        copy_text(c.source_file),
                        line or r"\N",
                        copy_text(c.system_prompt),
                        copy_text(_json(c.preamble)),
                        copy_text(_json(c.metadata)),
                        str(len(c.turns)),
                        now,
                        copy_text(c.fingerprint),
                        job_id,
                        copy_text(c.key),
                    )
                )
                + "\n"
            )
            for t in c.turns:
                turns.append(
                    "\t".join(
                        (
                            pk,
                            str(t.index),
                            copy_text(t.user_text),
                            copy_text(t.reply_text),
                            copy_text(_json(t.reply_parts)),
                            "t" if t.reply_empty else "f",
                            "t" if t.reply_missing else "f",
                            copy_text(_json(t.metadata)),
                        )
                    )
                    + "\n"
                )
        return "".join(conversations).encode(), "".join(turns).encode()


def imported(study: Study, fingerprints: set[str]):
    """The study's conversations with these fingerprints: (fingerprint, job, turns, id)."""
    return Conversation.objects.filter(study=study, fingerprint__in=fingerprints).values_list(
        "fingerprint", "import_job_id", "n_turns", "pk"
    )


def earlier_ids(study: Study, ids: set[str]):
    """The study's conversations with these dataset ids, first stored first."""
    return (
        Conversation.objects.filter(study=study, external_id__in=ids)
        .order_by("id")
        .values_list("external_id", "source_file", "source_line")
    )


def _close_connection() -> None:
    """In the writer thread: close that thread's own connection (`connection` is per
    thread; `connection.close` looked up elsewhere would be another thread's)."""
    connection.close()


def _json(value) -> str:
    """The value as JSON text for a jsonb column: orjson's, which PostgreSQL reads as the
    same value as json.dumps's (only the blanks differ). Where orjson would store another
    value or refuses (NaN and infinities, which it writes as null and PostgreSQL refuses
    as NaN; integers beyond 64 bits; keys that are not strings; lone surrogates), the
    stdlib's text is used, so a value is refused or stored exactly as before."""
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False)
    # a null may stand for a NaN: only then is the stdlib asked (it writes null as null)
    if b"null" in text:
        return json.dumps(value, ensure_ascii=False)
    return text.decode()


def display_name(path: str | Path, display_names: dict | None) -> str:
    if display_names:
        for key in (path, str(path)):
            if key in display_names:
                return str(display_names[key])
    return str(path)
