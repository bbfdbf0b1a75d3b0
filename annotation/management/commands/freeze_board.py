"""python manage.py freeze_board SLUG --mapping FILE [--by USERNAME]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Role, Study
from annotation.opensort.files import TagFileError, freeze_with_mapping, read_mapping
from annotation.opensort.freeze import FreezeRefused


class Command(BaseCommand):
    help = (
        "Group the open sort's tags under types from a mapping file ({types: [...], tags: "
        "{tag: type}}) and freeze the board as its button does: the types become a taxonomy "
        "version and each tag set its annotator's round-1 labels. One transaction."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--mapping", required=True, help="the JSON mapping file")
        parser.add_argument("--by", help="the lead the board's history names (default: none)")

    def handle(self, *args, slug: str, mapping: str, by: str | None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        actor = None
        if by is not None:
            actor = get_user_model().objects.filter(username=by).first()
            if actor is None or study.role_of(actor) != Role.LEAD:
                raise CommandError(f"--by: {by!r} is not a lead of {slug}")
        try:
            result = freeze_with_mapping(study, read_mapping(mapping), actor)
        except OSError as e:
            raise CommandError(f"{mapping}: {e.strerror}") from None
        except (TagFileError, FreezeRefused) as e:
            raise CommandError(f"nothing was changed:\n{e}") from None
        self.stdout.write(
            f"{result.event.summary}; the study is now on {result.version}, in the closed sort."
        )
