from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.annotation_import import import_annotations
from annotation.models import Study


class Command(BaseCommand):
    help = (
        "Import annotations from a JSONL file, one record a line: "
        '{"conversation": id, "turn": 1-based index, "annotator": username, '
        '"labels": [type codes], "round": 1, "group": name}. Bad records are reported '
        "and skipped; exits non-zero only when nothing could be imported."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", help="the study's slug")
        parser.add_argument("file", help="a JSONL file")
        parser.add_argument(
            "--create-members",
            action="store_true",
            help="create unknown annotators (no usable password) and groups, and add "
            "annotators to the record's group",
        )

        parser.add_argument(
            "--judge",
            action="store_true",
            help="the file is a reference annotator's (e.g. an LLM judge's) round-1 labels: "
            "kept and compared with the consensus on the report, never voting in the rounds",
        )

    def handle(
        self, *args, slug: str, file: str, create_members: bool, judge: bool, **options
    ) -> None:
        study = Study.objects.select_related("taxonomy_version").filter(slug=slug).first()
        if study is None:
            raise CommandError(f"unknown study {slug!r}")
        try:
            report = import_annotations(study, file, create_members=create_members, judge=judge)
        except OSError as e:
            raise CommandError(f"{file}: cannot read: {e.strerror or e}") from e
        for line in report.rejected:
            self.stderr.write(line)
        self.stdout.write(report.summary())
        if report.imported == 0:
            raise CommandError(f"{file}: nothing could be imported")
