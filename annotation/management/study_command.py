"""What the commands about one study share: the slug argument and the study it names."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study


class StudyCommand(BaseCommand):
    """A command about one existing study, named by its slug (the first argument)."""

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", help="the study's slug")

    def get_study(self, slug: str) -> Study:
        study = Study.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if study is None:
            known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True))
            raise CommandError(
                f"unknown study {slug!r} (studies: {known or 'none'}; create_study makes one)"
            )
        return study
