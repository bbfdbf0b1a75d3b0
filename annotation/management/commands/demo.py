"""`manage.py demo`: a ready-to-click study for `make run`. Idempotent: a second run leaves
the existing demo alone and says so; `--reset` deletes the demo study and builds it again.
`--study agents` builds the agent-misalignment demo instead (annotation/management/
agents_demo.py: episodes from two extraction runs, judged, its agreement computed)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.demo import CONVERSATIONS
from annotation.importers import import_files
from annotation.management import agents_demo
from annotation.models import Conversation, Group, Kind, Role, Seat, Study
from taxonomy.models import Taxonomy

SLUG = "demo"
NAME = "Interaction smells demo"
PRESET = "interaction-smells"
PASSWORD = "demo"
HOST = "127.0.0.1"
DEFAULT_PORT = 8000  # `make run`'s; `make run PORT=8061` passes its own (--port)

# username -> (role, kind), in the order the console table lists them
USERS: dict[str, tuple[str, str]] = {
    "lead": (Role.LEAD, Kind.EXPERT),
    "moderator": (Role.MODERATOR, Kind.EXPERT),
    "alice": (Role.ANNOTATOR, Kind.STUDENT),
    "bob": (Role.ANNOTATOR, Kind.STUDENT),
    "carol": (Role.ANNOTATOR, Kind.STUDENT),
    "dave": (Role.ANNOTATOR, Kind.STUDENT),
}

# group name -> (kind, annotators, moderator); each group gets an equal share of the chats
GROUPS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Students A": (Kind.STUDENT, ("alice", "bob"), "moderator"),
    "Students B": (Kind.STUDENT, ("carol", "dave"), "moderator"),
    # no moderator of their own: an expert group settles by discussion, the lead decides the rest
    "Experts": (Kind.EXPERT, ("lead", "moderator"), None),
}


class Command(BaseCommand):
    help = "Create the demo study, its users and groups, and import demo conversations."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--reset", action="store_true", help="delete the demo study and create it again"
        )
        parser.add_argument(
            "--port",
            type=int,
            default=DEFAULT_PORT,
            help=f"the port the server runs on, for the address printed (default {DEFAULT_PORT})",
        )
        parser.add_argument(
            "--study",
            choices=("smells", "agents"),
            default="smells",
            help="smells (default): the interaction-smells demo; agents: the agent-misalignment "
            "demo (episodes from two extraction runs, judged by two annotators, agreement "
            "computed)",
        )

    def handle(self, *args, reset: bool = False, port: int = DEFAULT_PORT, **options) -> None:
        agents = options.get("study") == "agents"
        slug, name = (agents_demo.SLUG, agents_demo.NAME) if agents else (SLUG, NAME)
        existing = Study.objects.filter(slug=slug).first()
        if existing is not None and not reset:
            self.stdout.write(
                f"The demo study '{slug}' already exists; nothing changed "
                "(use --reset to recreate it)."
            )
        else:
            # One transaction: a run that fails halfway must not leave a half-built demo that
            # the next run would take for a finished one.
            with transaction.atomic():
                if existing is not None:
                    existing.delete()
                    self.stdout.write(f"Deleted the demo study '{slug}'.")
                study = agents_demo.create_agents_demo(PASSWORD) if agents else create_demo()
            n_turns = sum(c.n_turns for c in study.conversations.all())
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created the demo study '{slug}' ({name}): "
                    f"{study.conversations.count()} conversations, {n_turns} turns."
                )
            )
        if agents:
            self.stdout.write(_agents_table(f"http://{HOST}:{port}/"))
        else:
            self.stdout.write(_login_table(f"http://{HOST}:{port}/"))


def create_demo() -> Study:
    study = Study.objects.create(
        slug=SLUG, name=NAME, taxonomy_version=Taxonomy.load_preset(PRESET)
    )
    users = {}
    User = get_user_model()
    for username, (role, kind) in USERS.items():
        user, _ = User.objects.get_or_create(username=username)
        # A reset also restores the documented password, in case someone changed it.
        user.set_password(PASSWORD)
        user.save()
        users[username] = user
        study.add_member(user, role, kind)

    groups = []
    for name, (kind, annotators, moderator) in GROUPS.items():
        group = Group.objects.create(study=study, name=name, kind=kind)
        # through Group.seat, the one rule of who may sit in a group as what
        if moderator:
            group.seat(users[moderator], Seat.MODERATOR)
        for username in annotators:
            group.seat(users[username], Seat.ANNOTATOR)
        groups.append(group)

    _import_conversations(study)
    # Round robin over the ids (demo-01a, demo-01b, demo-01c, demo-02a, ...): each group gets
    # one variant of every storyline, and so every smell.
    ids = list(study.conversations.order_by("external_id").values_list("id", flat=True))
    for i, group in enumerate(groups):
        Conversation.objects.filter(pk__in=ids[i :: len(groups)]).assign(group)
    return study


def _import_conversations(study: Study) -> None:
    """Import the demo's native JSONL file with the real importer, so the demo exercises the
    same path as an uploaded file."""
    report = import_files(
        study, [CONVERSATIONS], fmt="native", display_names={str(CONVERSATIONS): "demo"}
    )
    problems = report.errors + report.files_not_read
    if problems or not report.conversations:
        raise CommandError("demo import failed: " + "; ".join(problems or ["no records"]))


def _login_table(url: str) -> str:
    groups_of: dict[str, list[str]] = {u: [] for u in USERS}
    for name, (_, annotators, moderator) in GROUPS.items():
        for username in annotators:
            groups_of[username].append(f"{name} (annotator)")
        if moderator:
            groups_of[moderator].append(f"{name} (moderator)")
    rows = [("user", "password", "role", "groups")]
    rows += [
        (u, PASSWORD, f"{role} ({kind})", ", ".join(groups_of[u]))
        for u, (role, kind) in USERS.items()
    ]
    w = [max(len(row[c]) for row in rows) for c in range(3)]
    lines = ["", f"Open {url} and log in to the study '{NAME}' as:", ""]
    for user, password, role, groups in rows:
        lines.append(f"  {user:<{w[0]}}  {password:<{w[1]}}  {role:<{w[2]}}  {groups}")
    return "\n".join(lines)


def _agents_table(url: str) -> str:
    lines = ["", f"Open {url} and log in to the study '{agents_demo.NAME}' as:", ""]
    for user, (role, kind) in agents_demo.USERS.items():
        lines.append(f"  {user:<10} {PASSWORD}  {role} ({kind})")
    lines.append(f"The agreement report: {url}s/{agents_demo.SLUG}/report/")
    return "\n".join(lines)
