"""python manage.py import_conversations SLUG PATH... [--format auto|native|...]
    [--bigcodebench FILE] [--filter coding] [--dry-run] [--modality ide|cli] [--tool NAME]

A PATH is a file or a folder (every file below it of a known format; the others are listed
as skipped). Prints a summary and one line per rejected record (`file:line: reason`), then
one `file: why` per file it could not read at all and one `warning: ...` per warning;
fails (non-zero exit) only when nothing could be imported. The summary's counts add up:
records read = imported + rejected + dropped by the filter + already imported. A record the
study already holds (the same fingerprint: an earlier import of the same file) is skipped
and counted as "already imported", so running the command twice adds nothing twice, and is
no failure.
`--filter coding` keeps only the conversations the study's coding rules match
(annotation/intake/coding_filter.py) and prints what it dropped, per language and reason;
`--dry-run` writes nothing and prints what an import would do, with the filter's examples of
matches and near misses.
`--modality ide|cli` and `--tool NAME` set every imported conversation's `modality` and `tool`
metadata, over what its log says (annotation/importers/modality.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError
from django.db.models import Max
from django.utils import timezone

from annotation.importers import FORMATS, import_files, modality
from annotation.intake.coding_filter import RulesError, rules_for
from annotation.intake.coding_report import CodingFilter, report_lines
from annotation.jobs import record_command_import
from annotation.management.study_command import StudyCommand
from annotation.models import Conversation

FILTERS = ["coding"]


class Command(StudyCommand):
    help = (
        "Import conversation files (JSONL, JSON arrays or Parquet, gzip too; SpecStory "
        "Markdown, agent logs) or folders of them into a study."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("files", nargs="+", metavar="PATH")
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])
        parser.add_argument(
            "--bigcodebench",
            metavar="FILE",
            help="ConvCodeBench: a bigcode/bigcodebench export to take turn 1's task "
            "instruction from (else a placeholder)",
        )
        parser.add_argument(
            "--filter", choices=FILTERS, help="keep only the conversations the study's rules match"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="write nothing; print what would happen"
        )
        parser.add_argument(
            "--modality",
            choices=modality.MODALITIES,
            help="where every session of this import ran: ide or cli (over what the logs say)",
        )
        parser.add_argument("--tool", metavar="NAME", help="the tool every session ran in")

    def handle(self, *args, slug: str, files: list[str], format: str, **options):
        study = self.get_study(slug)
        bigcodebench = options.get("bigcodebench")
        if bigcodebench and not Path(bigcodebench).is_file():
            raise CommandError(f"--bigcodebench: no such file: {bigcodebench}")
        extra = {"bigcodebench": bigcodebench} if bigcodebench else {}
        keep = None
        if options["filter"] == "coding":
            try:
                keep = CodingFilter(rules_for(study))
            except RulesError as exc:
                raise CommandError(f"The study's coding rules cannot be used: {exc}") from None
        dry_run = options["dry_run"]
        after_id, started_at = Conversation.objects.aggregate(m=Max("pk"))["m"] or 0, timezone.now()
        given = modality.overrides(options.get("modality"), options.get("tool"))
        report = import_files(
            study, files, fmt=format, options=extra, keep=keep, dry_run=dry_run, metadata=given
        )
        for error in report.errors:
            self.stderr.write(error)
        for error in report.files_not_read:  # each says it was not read: no record counted
            self.stderr.write(error)
        for skipped in report.skipped:
            self.stderr.write(f"skipped: {skipped}")
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        if report.warnings_dropped:
            self.stderr.write(f"warning: {report.warnings_dropped} more warnings not shown")
        if keep is not None:
            for line in report_lines(keep.result()):
                self.stdout.write(line)
        if dry_run:
            self.stdout.write("Dry run: nothing was written.")
            self.stdout.write(report.summary_line())
            return
        if report.conversations == 0 and report.already_imported == 0:
            raise CommandError(f"Nothing could be imported. {report.summary_line()}")
        self.stdout.write(report.summary_line())
        # kept as the import page's job would be (the methods section reads it)
        record_command_import(
            study, report, files=files, fmt=format, after_id=after_id, started_at=started_at,
            filter_report=keep.result() if keep is not None else None,
        )  # fmt: skip
