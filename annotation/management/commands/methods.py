"""python manage.py methods SLUG [--format md|tex|json] [--output FILE]"""

from __future__ import annotations

import json

from annotation.management.study_command import StudyCommand
from annotation.methods import methods_of
from annotation.methods.render import to_latex, to_markdown

WRITERS = {
    "md": to_markdown,
    "tex": to_latex,
    "json": lambda section: json.dumps(section, allow_nan=False, indent=2, ensure_ascii=False),
}


class Command(StudyCommand):
    help = (
        "Print the study's methods section: per step (import, coding filter, splitting, "
        "second filter, split check, sample, phases and teams, agreement, episodes, "
        "moderation) a short text and a table with its numbers and parameters, from what the "
        "tool recorded. "
        "--format json gives the structured data (one object per step), md and tex render it."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--format", choices=list(WRITERS), default="md")
        parser.add_argument("--output", metavar="FILE", help="write there instead of stdout")

    def handle(self, *args, slug: str, format: str, output: str | None, **options) -> None:
        text = WRITERS[format](methods_of(self.get_study(slug)))
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            self.stdout.write(f"Wrote the methods section of {slug} to {output}.")
        else:
            self.stdout.write(text)
