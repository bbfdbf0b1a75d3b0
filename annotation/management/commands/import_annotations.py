from __future__ import annotations

from django.core.management.base import CommandError

from annotation.importers.annotations import import_annotations
from annotation.management.study_command import StudyCommand
from annotation.models import Kind


class Command(StudyCommand):
    help = (
        "Import annotations from a JSONL file, one record a line: "
        '{"conversation": id, "turn": 1-based index, "annotator": username, '
        '"labels": [type codes], "round": 1, "group": name}; or an episode\'s judgement '
        '{"episode": id, "run": name, "annotator", "group", "round", "valid": true|false, '
        '"invalid_reason": code, "labels": {axis: [codes]}}, or a session\'s coverage '
        'rating {"conversation", "annotator", "group", "coverage": 0|1|2}. Bad records are '
        "reported and skipped; exits non-zero only when nothing could be imported."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("file", help="a JSONL file")
        parser.add_argument(
            "--create-members",
            action="store_true",
            help="create unknown annotators (no usable password) and groups, and add "
            "annotators to the record's group",
        )
        parser.add_argument(
            "--kind",
            choices=Kind.values,
            default=Kind.STUDENT,
            help="with --create-members: the kind of the groups it creates, and so of the "
            "members it seats in them (experts decide proposals; default: student)",
        )

        parser.add_argument(
            "--batch-size",
            type=int,
            default=2000,
            help="records written per transaction (default 2000)",
        )
        parser.add_argument(
            "--progress-every",
            type=int,
            default=10_000,
            help="print progress every N records (default 10000; 0: never)",
        )
        parser.add_argument(
            "--judge",
            action="store_true",
            help="the file is a reference annotator's (e.g. an LLM judge's) round-1 labels: "
            "kept and compared with the consensus on the report, never voting in the rounds",
        )

    def handle(
        self,
        *args,
        slug: str,
        file: str,
        create_members: bool,
        judge: bool,
        kind: str,
        batch_size: int,
        progress_every: int,
        **options,
    ) -> None:
        study = self.get_study(slug)
        if batch_size < 1:
            raise CommandError(f"--batch-size: must be at least 1, got {batch_size}")
        try:
            report = import_annotations(
                study,
                file,
                create_members=create_members,
                judge=judge,
                kind=kind,
                batch_size=batch_size,
                progress=self.progress_printer(progress_every),
            )
        except OSError as e:
            raise CommandError(f"{file}: cannot read: {e.strerror or e}") from e
        for line in report.rejected:
            self.stderr.write(line)
        self.stdout.write(report.summary())
        if report.imported == 0:
            raise CommandError(f"{file}: nothing could be imported")

    def progress_printer(self, every: int):
        """progress(done, total) printing a line each time another `every` records are
        through, and at the end: a 40,000-record import says where it is."""
        printed = 0

        def progress(done: int, total: int) -> None:
            nonlocal printed
            if every <= 0 or (done // every == printed // every and done < total):
                return
            printed = done
            self.stdout.write(f"{done}/{total} records done")

        return progress
