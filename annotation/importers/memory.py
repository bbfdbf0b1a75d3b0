"""What one import remembers beside the database (writer.py), so that its counts add up and a
dry run's counts are the real run's, whatever the batch size (ImportReport: every record
read is imported, rejected, dropped by the filter or already imported).

The writer decides each record of a batch in this order: already imported (its fingerprint
is in the study, or was written earlier in this import), rejected as a duplicate id,
dropped by the filter (`keep`), else written. So the filter judges exactly the records that
would otherwise be written. A record the filter drops still holds its id for the rest of
the import: a later record with that id is a duplicate in any batch, and the same record
read again (same fingerprint) is judged, and dropped, again.

The database holds what a real run wrote; this holds the rest: the ids of the records the
filter dropped, and in a dry run, which writes nothing, every id and the fingerprint of
every record it would have written. It grows with the records dropped (in a dry run, with
the records read); a real run without a filter holds nothing.

A resumed job (its worker was lost) counts the rows it wrote on an earlier run, those there
when this run began, as its own imports, each once. A row this run wrote is "already
imported" when its record is read again (the same file given twice)."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Max

from annotation.models import Conversation

from .base import BuiltConversation, ImportReport


class ImportMemory:
    def __init__(self, job=None, dry_run: bool = False) -> None:
        self.dry_run = dry_run
        self.job_id = job.pk if job is not None else None
        # id -> (where its first record was read, that record's fingerprint if the filter
        # dropped it, else ""), for the ids the database does not hold
        self.ids: dict[str, tuple[str, str]] = {}
        self.would_write: set[bytes] = set()  # a dry run's fingerprints, as digests
        # a resumed job: the largest id of its rows when this run began, and those of them
        # this run has met
        self.resume_below = last_row(job) if job is not None and not dry_run else None
        self.resumed: set[int] = set()

    # already imported ----------------------------------------------------------------------

    def earlier_run(self, job_id: int | None, pk: int | None) -> bool:
        """The row `pk` (of import job `job_id`) is this job's, written on an earlier run,
        and met for the first time in this run: a resumed import, not an import again."""
        if self.resume_below is None or job_id != self.job_id or pk is None:
            return False
        if pk > self.resume_below or pk in self.resumed:
            return False
        self.resumed.add(pk)
        return True

    def would_have_written(self, fingerprint: str) -> bool:
        """A dry run's earlier batch would have written a record with this fingerprint."""
        return bool(self.would_write) and bytes.fromhex(fingerprint) in self.would_write

    def written(self, batch: list[BuiltConversation]) -> None:
        """A dry run's batch that a real run would have written."""
        if self.dry_run:
            self.would_write.update(bytes.fromhex(c.fingerprint) for c in batch if c.fingerprint)

    # duplicate ids -------------------------------------------------------------------------

    def first_read(self, checked: list[BuiltConversation], first: dict[str, str]) -> set[str]:
        """Add to `first` (id -> where it was first read; the database's entries come first)
        the ids read earlier in this import that the database does not hold. Returns the
        fingerprints of the records of `checked` that a dropped record was: read again,
        they go to the filter, not to the duplicates."""
        again: set[str] = set()
        for external_id in {c.external_id for c in checked} & self.ids.keys():
            where, dropped = self.ids[external_id]
            first.setdefault(external_id, where)
            if dropped:
                again.add(dropped)
        return again

    def claim(self, conversation: BuiltConversation) -> None:
        """The record is the first of its id and passed the duplicate check: a real run's
        database will hold it if it is written; a dry run holds it here."""
        if self.dry_run:
            self.ids[conversation.external_id] = (conversation.location, "")

    # the filter ----------------------------------------------------------------------------

    def screen(
        self,
        batch: list[BuiltConversation],
        keep: Callable[[BuiltConversation], bool] | None,
        report: ImportReport,
    ) -> list[BuiltConversation]:
        """The records `keep` takes; the others are counted as dropped and hold their ids."""
        if keep is None:
            return batch
        kept = []
        for conversation in batch:
            if keep(conversation):
                kept.append(conversation)
                continue
            report.dropped += 1
            held = self.ids.get(conversation.external_id)
            # the first record of its id (a dry run's claim names it already), not a copy
            if conversation.check_duplicate and (held is None or not held[1]):
                where = (conversation.location, conversation.fingerprint)
                self.ids[conversation.external_id] = where
        return kept


def last_row(job) -> int | None:
    """The largest id of the job's rows so far (an earlier run's), or None."""
    return Conversation.objects.filter(import_job=job).aggregate(last=Max("pk"))["last"]
