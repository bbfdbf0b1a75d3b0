"""python manage.py create_group SLUG NAME --kind expert|student [--moderator USERNAME]
[--phase open_sort|closed_sort] [--unit turn|episode]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.actions.groups import GroupRefused, create_group
from annotation.management.study_command import StudyCommand
from annotation.models import Kind, Phase, SeatRefused, Unit


class Command(StudyCommand):
    help = "Create a group of experts or students in a study, with its moderator and phase."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("name", help="the group's name, unique in the study")
        parser.add_argument("--kind", required=True, choices=Kind.values)
        parser.add_argument(
            "--moderator",
            metavar="USERNAME",
            help="the group's moderator (default: none, the study's leads moderate)",
        )
        parser.add_argument(
            "--phase",
            default="",
            choices=Phase.values,
            help="the group's own phase (default: it follows the study's)",
        )
        parser.add_argument(
            "--unit",
            default=Unit.TURN,
            choices=Unit.values,
            help="what its annotators label: turns (cards, the default) or episodes",
        )

    def handle(self, *args, slug: str, name: str, kind: str, **options) -> None:
        study = self.get_study(slug)
        moderator = None
        if options["moderator"]:
            username = options["moderator"]
            moderator = get_user_model().objects.filter(username=username).first()
            if moderator is None:
                raise CommandError(
                    f"no user named {username!r} to moderate the group (add_members "
                    "--create-users creates users); nothing was created"
                )
        try:
            group = create_group(
                study, name, kind, phase=options["phase"], moderator=moderator, unit=options["unit"]
            )
        except (GroupRefused, SeatRefused) as e:
            raise CommandError(f"{e}; nothing was created") from None
        phase = Phase(group.effective_phase).label.lower()
        own = "" if group.phase else " (the study's)"
        self.stdout.write(
            f"Created group {group.name} ({group.kind}) in study {study.slug}, {phase}{own}, "
            f"labelling {group.unit}s."
        )
        who = moderator.username if moderator else "none (the study's leads moderate)"
        self.stdout.write(f"moderator: {who}")
