"""python manage.py add_members SLUG USERNAME... --role annotator|moderator|lead
--kind expert|student [--group NAME] [--create-users]"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import transaction

from annotation.actions.members import MemberRefused, add_member, find_users
from annotation.management.study_command import StudyCommand, get_group
from annotation.models import Kind, Role, SeatRefused


class Command(StudyCommand):
    help = (
        "Make people members of a study with a role and a kind, as the members page does; "
        "with --group, seat annotators (and leads) among the group's annotators and a "
        "moderator as the group's moderator. All of it, or nothing."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("usernames", nargs="+", metavar="USERNAME")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--kind",
            required=True,
            choices=Kind.values,
            help="experts (and leads) decide proposals of new types",
        )
        parser.add_argument(
            "--group",
            metavar="NAME",
            help="seat them in this group: its annotators, or (--role moderator) its moderator",
        )
        parser.add_argument(
            "--create-users",
            action="store_true",
            help="create unknown users, with no usable password (an invitation or a password "
            "reset sets one)",
        )

    def handle(self, *args, slug: str, usernames: list[str], **options) -> None:
        study = self.get_study(slug)
        group = get_group(study, options["group"]) if options["group"] else None
        role, kind = options["role"], options["kind"]
        if role == Role.MODERATOR and group is not None and len(set(usernames)) > 1:
            raise CommandError("a group has one moderator: name one USERNAME with --group")
        lines = []
        with transaction.atomic():
            try:
                users, created = find_users(
                    usernames, create=options["create_users"], option="--create-users"
                )
            except MemberRefused as e:
                raise CommandError(f"{e}; nothing changed") from None
            for user in users:
                try:
                    done = add_member(study, user, role, kind, group)
                except (MemberRefused, SeatRefused) as e:
                    raise CommandError(f"{user.username}: {e}; nothing changed") from None
                if user in created:
                    done.insert(0, "created user (no usable password)")
                lines.append(f"{user.username}: {'; '.join(done)}")
        self.stdout.write("\n".join(lines))
