"""python manage.py import_episodes SLUG FILE [--run NAME] [--min-confidence X]
[--source MODEL] [--parameters JSON]: an extractor's episodes (annotation/importers/episodes.py)."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from annotation.importers.episodes import EpisodeImportError, import_episodes
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Import an extractor's episodes from a JSONL file, one a line: "
        '{"conversation": id, "first_turn": n, "last_turn": m, "goal": text, '
        '"confidence": 0-1, "evidence": [{"turn": n, "part": "user|reply|thinking|tool_call|'
        'tool_result", "quote": text}], optional "labels": {axis: [codes]}, "valid", '
        '"invalid_reason"}, as one named run. Bad lines and quotes not found are reported; '
        "the import is one transaction."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("file", help="a JSONL file (.gz too)")
        parser.add_argument("--run", help="the run's name (default: the file's name)")
        parser.add_argument(
            "--min-confidence",
            type=float,
            default=None,
            help="episodes with a lower confidence are counted as dropped, not imported",
        )
        parser.add_argument(
            "--source", default="", help="who or what extracted: a model's name or a person's"
        )
        parser.add_argument(
            "--parameters", default="{}", help="the extractor's settings, a JSON object"
        )
        parser.add_argument("--batch-size", type=int, default=2000, help="lines a batch")

    def handle(self, *args, slug: str, file: str, **options) -> None:
        study = self.get_study(slug)
        try:
            parameters = json.loads(options["parameters"])
        except ValueError as e:
            raise CommandError(f"--parameters: not JSON ({e})") from None
        if not isinstance(parameters, dict):
            raise CommandError("--parameters: must be a JSON object")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size: must be at least 1")
        try:
            report = import_episodes(
                study,
                file,
                options["run"],
                min_confidence=options["min_confidence"],
                source=options["source"],
                parameters=parameters,
                batch_size=options["batch_size"],
            )
        except EpisodeImportError as e:
            raise CommandError(f"{e}; nothing was imported") from None
        except OSError as e:
            raise CommandError(f"{file}: cannot read: {e.strerror or e}") from None
        for line in report.messages:
            self.stderr.write(line)
        self.stdout.write(report.summary())
        if report.removed:
            raise CommandError(f"{file}: nothing could be imported")
