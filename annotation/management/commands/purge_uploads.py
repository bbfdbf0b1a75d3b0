"""python manage.py purge_uploads [--failed-days N]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.uploads import keep_days, purge


class Command(BaseCommand):
    help = (
        "Remove the uploaded files of imports that succeeded more than "
        "CARDSORT_UPLOAD_KEEP_DAYS days ago (0: every succeeded import's). A failed import "
        "keeps its files unless --failed-days N is given: then those of imports that failed "
        "more than N days ago go too. The rejected records' list of an import is kept."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--failed-days",
            type=int,
            default=None,
            help="also remove the files of imports that failed more than N days ago",
        )

    def handle(self, *args, failed_days: int | None = None, **options) -> None:
        if failed_days is not None and failed_days < 0:
            raise CommandError(f"--failed-days: must be 0 or more, got {failed_days}")
        n = purge(failed_days=failed_days)
        self.stdout.write(
            f"Removed the uploads of {n} import(s) (kept: {keep_days()} day(s) after success)."
        )
