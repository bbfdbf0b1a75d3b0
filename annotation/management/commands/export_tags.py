"""python manage.py export_tags SLUG [--output FILE]"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.opensort.files import export_tag_sets, write_jsonl


class Command(BaseCommand):
    help = (
        "Write every free-tag set of the study's open sort as JSON lines (conversation, turn, "
        "group, annotator, tags, note, no_smell): what import_tags reads."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--output", help="the file to write (default: standard output)")

    def handle(self, *args, slug: str, output: str | None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if output is None:
            write_jsonl(export_tag_sets(study), self.stdout)
            return
        try:
            with open(output, "w", encoding="utf-8") as f:
                n = write_jsonl(export_tag_sets(study), f)
        except OSError as e:
            raise CommandError(f"{output}: {e.strerror}") from None
        print(f"{n} tag set(s) written to {output}.", file=sys.stderr)
