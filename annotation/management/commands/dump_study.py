"""`manage.py dump_study SLUG FILE`: the study, all of it, to one gzipped file ('-': stdout).
annotation/backup/fileformat.py describes the file; `load_study` reads it back."""

from __future__ import annotations

import resource
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from annotation.backup.dump import dump_study
from annotation.backup.fileformat import BackupError


class Command(BaseCommand):
    help = "Write a study (rows, taxonomy versions, users by name, job files) to one file."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file", help="the file to write, '-' for standard output")

    def handle(self, *args, slug: str, file: str, **options) -> None:
        started = time.monotonic()
        try:
            counts = dump_study(slug, file)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        report = sys.stderr if file == "-" else self.stdout
        report.write(_summary("dumped", slug, counts, time.monotonic() - started) + "\n")


def _summary(verb: str, slug: str, counts, seconds: float) -> str:
    tables = {k: n for k, n in counts.items() if "." in k and k != "auth.User" and n}
    rows = sum(tables.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (
        f"{verb} study {slug}: {rows} rows of {len(tables)} models, "
        f"{counts.get('auth.User', 0)} users, {counts.get('files', 0)} files "
        f"in {seconds:.1f} s (peak memory {peak:.0f} MB)"
    )
