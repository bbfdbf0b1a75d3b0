"""python manage.py create_split_check SOURCE_SLUG NEW_SLUG [--unit entries|boundaries]
--n N|auto --seed S [--confidence 0.95 --margin 0.05] [--name ...]"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.intake.splitcheck import (
    BOUNDARIES,
    ENTRIES,
    UNITS,
    SplitCheckError,
    create_split_check,
    open_proposals,
)
from annotation.management.study_command import StudyCommand, count_or_auto


class Command(StudyCommand):
    help = (
        "Make a split-check study from a seeded sample of a study's entries (the default: "
        "each conversation offered to the splitter, as its parts if it was split, itself if "
        "it was left whole; one card each, the entry beside its original) or, with --unit "
        "boundaries, of its split points (the original beside the two parts). The source "
        "study's leads lead it."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("new_slug", help="the split-check study's slug")
        parser.add_argument(
            "--unit", choices=UNITS, default=ENTRIES, help="what a card checks (default entries)"
        )
        parser.add_argument(
            "--n",
            required=True,
            help="units to draw, or 'auto': Cochran's size for --confidence and --margin",
        )
        parser.add_argument("--seed", type=int, required=True, help="the draw's seed")
        parser.add_argument("--confidence", type=float, help="with --n auto (default 0.95)")
        parser.add_argument("--margin", type=float, help="with --n auto (default 0.05)")
        parser.add_argument("--name", default="", help="display name (default: from the source)")

    def handle(self, *args, slug: str, new_slug: str, unit: str, **options):
        source = self.get_study(slug)
        n = count_or_auto(options["n"])
        if n is not None and (options["confidence"] is not None or options["margin"] is not None):
            raise CommandError("--confidence and --margin size the draw of --n auto only")
        try:
            study = create_split_check(
                source, new_slug, unit=unit, n=n, seed=options["seed"], name=options["name"],
                confidence=options["confidence"], margin=options["margin"],
            )  # fmt: skip
        except SplitCheckError as exc:
            raise CommandError(str(exc)) from None
        leads = study.memberships.count()
        preset = study.taxonomy_version.taxonomy.slug
        self.stdout.write(
            f"Created study {study.slug} ({study.name}) on taxonomy {preset}: "
            f"{study.description} {leads} lead(s) of {source.slug} lead it."
        )
        if unit != BOUNDARIES and (waiting := open_proposals(source)):
            self.stdout.write(
                f"Note: {waiting:,} conversation{'s' if waiting != 1 else ''} left whole still "
                "have open split proposals: the splitting is not finished, and they count as "
                "left whole."
            )
