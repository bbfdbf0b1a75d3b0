"""python manage.py import_conversations SLUG FILE... [--format auto|native|...]

Prints a summary and one line per rejected record (`file:line: reason`); fails (non-zero
exit) only when nothing could be imported."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.importers import FORMATS, import_files
from annotation.models import Study


class Command(BaseCommand):
    help = "Import conversation files (JSONL or JSON arrays) into a study."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])

    def handle(self, *args, slug: str, files: list[str], format: str, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r} (create it with create_study)")
        report = import_files(study, files, fmt=format)
        for error in report.errors:
            self.stderr.write(error)
        for warning in report.warnings:
            self.stderr.write(f"warning: {warning}")
        if report.warnings_dropped:
            self.stderr.write(f"warning: {report.warnings_dropped} more warnings not shown")
        if report.conversations == 0:
            raise CommandError(f"Nothing could be imported. {report.summary_line()}")
        self.stdout.write(report.summary_line())
