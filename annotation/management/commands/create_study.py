"""python manage.py create_study SLUG (--lead USERNAME [--create-user] | --no-lead)
[--name ...] [--taxonomy interaction-smells] [--phase closed_sort|open_sort]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.actions.members import MemberRefused, new_user
from annotation.actions.studies import DEFAULT_PRESET, StudyRefused, create_study
from annotation.models import Phase

NEEDS_A_LEAD = (
    "name the study's lead with --lead USERNAME (a study without a lead is a 404 for everyone "
    "but a superuser), or say --no-lead to add one later (add_members SLUG USERNAME --role lead)"
)


class Command(BaseCommand):
    help = "Create a study on a preset taxonomy, with its lead."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        who = parser.add_mutually_exclusive_group()
        who.add_argument("--lead", metavar="USERNAME", help="the study's lead (an expert)")
        who.add_argument("--no-lead", action="store_true", help="create the study with no lead yet")
        parser.add_argument(
            "--create-user",
            action="store_true",
            help="create the --lead user, with no usable password, if there is none",
        )
        parser.add_argument("--name", default="", help="display name (default: the slug)")
        parser.add_argument("--taxonomy", default=DEFAULT_PRESET, help="preset slug")
        parser.add_argument(
            "--phase",
            default=Phase.CLOSED_SORT,
            choices=Phase.values,
            help="open_sort: annotators tag cards with free tags first (default: closed_sort)",
        )

    def handle(self, *args, slug: str, lead: str | None, no_lead: bool, **options):
        if lead is None and not no_lead:
            raise CommandError(NEEDS_A_LEAD)
        if options["create_user"] and lead is None:
            raise CommandError("--create-user creates the --lead user: name one with --lead")
        created = False
        try:
            with transaction.atomic():
                user = None
                if lead is not None:
                    user, created = self._lead(lead, options["create_user"])
                study = create_study(
                    slug,
                    lead=user,
                    name=options["name"],
                    taxonomy=options["taxonomy"],
                    phase=options["phase"],
                )
        except (StudyRefused, MemberRefused) as e:
            raise CommandError(f"{e}; nothing was created") from None
        version = study.taxonomy_version
        in_phase = " in the open sort" if study.phase == Phase.OPEN_SORT else ""
        self.stdout.write(
            f"Created study {study.slug} ({study.name}) on taxonomy "
            f"{version.taxonomy.slug} v{version.number}{in_phase}."
        )
        if user is None:
            self.stdout.write("No lead yet: add_members SLUG USERNAME --role lead adds one.")
        else:
            new = f" (created user {user.username}, no usable password)" if created else ""
            self.stdout.write(f"lead: {user.username}{new}")

    def _lead(self, username: str, create: bool):
        user = get_user_model().objects.filter(username=username).first()
        if user is not None:
            return user, False
        if not create:
            raise MemberRefused(
                f"no user named {username!r} to lead the study (add --create-user to "
                "create it with no usable password)"
            )
        return new_user(username), True
