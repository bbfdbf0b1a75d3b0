"""python manage.py create_split_check SOURCE_SLUG NEW_SLUG --n N --seed S [--name ...]"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.intake.splitcheck import SplitCheckError, create_split_check
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Make a split-check study from a seeded sample of a study's split points: one card "
        "per split point, the original beside its two parts; the source study's leads lead it."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("new_slug", help="the split-check study's slug")
        parser.add_argument("--n", type=int, required=True, help="split points to draw")
        parser.add_argument("--seed", type=int, required=True, help="the draw's seed")
        parser.add_argument("--name", default="", help="display name (default: from the source)")

    def handle(self, *args, slug: str, new_slug: str, n: int, seed: int, name: str, **options):
        source = self.get_study(slug)
        try:
            study = create_split_check(source, new_slug, n=n, seed=seed, name=name)
        except SplitCheckError as exc:
            raise CommandError(str(exc)) from None
        leads = study.memberships.count()
        self.stdout.write(
            f"Created study {study.slug} ({study.name}) on taxonomy split-check: "
            f"{study.description} {leads} lead(s) of {source.slug} lead it."
        )
