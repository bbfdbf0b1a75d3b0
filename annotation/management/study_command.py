"""What the commands about one study share: the slug argument and the study it names; and
what several commands read the same way (a count or 'auto', a file named by an option)."""

from __future__ import annotations

from pathlib import Path

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


def count_or_auto(
    text: str, option: str = "--n", error: type[Exception] = CommandError
) -> int | None:
    """A whole number, or None for 'auto' (the size is computed); `error` naming the option
    otherwise."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise error(f"{option} takes a whole number or 'auto', not {text!r}") from None


def read_file_option(path: str, option: str, limit: int) -> bytes:
    """The bytes of the file an option names; CommandError if it is missing or larger than
    `limit` bytes."""
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{option}: no such file: {path}")
    if file.stat().st_size > limit:
        raise CommandError(f"{option}: {path} has {file.stat().st_size} bytes: at most {limit}")
    return file.read_bytes()
