"""python manage.py create_study SLUG [--name ...] [--taxonomy interaction-smells]
[--phase closed_sort|open_sort]"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug

from annotation.models import Phase, Study
from taxonomy.models import Taxonomy


class Command(BaseCommand):
    help = "Create a study on a preset taxonomy."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="", help="display name (default: the slug)")
        parser.add_argument("--taxonomy", default="interaction-smells", help="preset slug")
        parser.add_argument(
            "--phase",
            default=Phase.CLOSED_SORT,
            choices=Phase.values,
            help="open_sort: annotators tag cards with free tags first (default: closed_sort)",
        )

    def handle(self, *args, slug: str, name: str, taxonomy: str, phase: str, **options):
        try:
            validate_slug(slug)
        except ValidationError:
            raise CommandError(
                f"{slug!r} is not a valid slug: use letters, digits, '-' and '_' only"
            ) from None
        if Study.objects.filter(slug=slug).exists():
            raise CommandError(f"a study with slug {slug!r} already exists")
        try:
            version = Taxonomy.load_preset(taxonomy)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        study = Study.objects.create(
            slug=slug, name=name or slug, taxonomy_version=version, phase=phase
        )
        in_phase = " in the open sort" if phase == Phase.OPEN_SORT else ""
        self.stdout.write(
            f"Created study {study.slug} ({study.name}) on taxonomy "
            f"{version.taxonomy.slug} v{version.number}{in_phase}."
        )
