"""`manage.py load_study FILE [--as NEWSLUG]`: a study written by `dump_study` into this
instance, in one transaction (a failure leaves nothing behind). Users are matched by
username; a missing one is created without a usable password (the lead sets one, or the
user asks for a reset)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from annotation.backup.fileformat import BackupError
from annotation.backup.load import Loader

from .dump_study import _summary


class Command(BaseCommand):
    help = "Load a study file written by dump_study (ids remapped, one transaction)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="the file to read, '-' for standard input")
        parser.add_argument(
            "--as", dest="rename", metavar="NEWSLUG", help="load the study under another slug"
        )

    def handle(self, *args, file: str, rename: str | None, **options) -> None:
        started = time.monotonic()
        loader = Loader(file, rename=rename)
        try:
            counts = loader.run()
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(_summary("loaded", loader.slug, counts, time.monotonic() - started))
        created = counts.get("users created", 0)
        if created:
            self.stdout.write(f"{created} users created without a usable password")
