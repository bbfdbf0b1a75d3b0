"""python manage.py import_tags SLUG FILE"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.opensort.files import TagFileError, import_tag_sets


class Command(BaseCommand):
    help = (
        "Save free-tag sets from a JSON-lines file (export_tags' format) through the card's own "
        "rules: round 1, blind, the group in the open sort, nobody's tags locked by a board "
        "visit. All or nothing: every bad line is named and nothing is saved."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("file")

    def handle(self, *args, slug: str, file: str, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        try:
            n = import_tag_sets(study, file)
        except OSError as e:
            raise CommandError(f"{file}: {e.strerror}") from None
        except TagFileError as e:
            raise CommandError(f"nothing was saved:\n{e}") from None
        self.stdout.write(f"{n} tag set(s) saved.")
