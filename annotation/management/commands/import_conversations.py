"""python manage.py import_conversations SLUG FILE... [--format auto|native|...]

Prints a summary and one line per rejected record (`file:line: reason`); fails (non-zero
exit) only when nothing could be imported. A record the study already holds (the same
fingerprint: an earlier import of the same file) is skipped and counted as "already
imported", so running the command twice adds nothing twice, and is no failure."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.importers import FORMATS, import_files
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = "Import conversation files (JSONL or JSON arrays) into a study."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])

    def handle(self, *args, slug: str, files: list[str], format: str, **options):
        study = self.get_study(slug)
        report = import_files(study, files, fmt=format)
        for error in report.errors:
            self.stderr.write(error)
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        if report.warnings_dropped:
            self.stderr.write(f"warning: {report.warnings_dropped} more warnings not shown")
        if report.conversations == 0 and report.already_imported == 0:
            raise CommandError(f"Nothing could be imported. {report.summary_line()}")
        self.stdout.write(report.summary_line())
