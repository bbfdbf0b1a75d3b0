"""What the commands about one study share: the slug argument and the study it names."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Group, Study


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


def get_group(study: Study, name: str) -> Group:
    """The study's group named `name`; CommandError naming the study's groups otherwise."""
    group = Group.objects.filter(study=study, name=name).first()
    if group is None:
        known = ", ".join(study.groups.order_by("name").values_list("name", flat=True))
        raise CommandError(
            f"unknown group {name!r} in study {study.slug} (groups: {known or 'none'}; "
            "create_group makes one)"
        )
    return group
