"""python manage.py assign SLUG --group NAME (--n N --seed S | --all | --ids FILE)
[--exclude-assigned]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError
from django.db import transaction

from annotation import conversation_keys
from annotation.actions.assign import (
    AssignRefused,
    assign_calibration,
    assign_every,
    assign_selection,
    draw,
    find_listed,
    names,
    shared_with_others,
)
from annotation.management.study_command import StudyCommand, get_group
from annotation.models import Conversation, SeatConflict

# a key (longer than an external id) and the ~1 that names the first of a repeated id
MAX_ID = conversation_keys.MAX_LENGTH + len(conversation_keys.FIRST)
MAX_LINE = 4 * MAX_ID + 2  # bytes: an id of MAX_ID characters in UTF-8, and its line end
MAX_SHOWN = 20  # bad lines printed; the others are counted
MAX_ERRORS = 1000  # bad lines read before reading stops


class Command(StudyCommand):
    help = (
        "Assign conversations of the study's set to a group: N drawn at random with a seed "
        "(the lead's 'Assign at random'), all of them, or those listed in a file. Without "
        "--exclude-assigned a conversation another group has is shared with this one (each "
        "group runs its own rounds on it); set-aside conversations are never assigned."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--group",
            action="append",
            required=True,
            metavar="NAME",
            help="the group; repeated, every group named gets the same conversations",
        )
        how = parser.add_mutually_exclusive_group(required=True)
        how.add_argument("--n", type=int, metavar="N", help="draw N at random (needs --seed)")
        how.add_argument("--all", action="store_true", help="every conversation of the set")
        how.add_argument(
            "--ids",
            metavar="FILE",
            help="one conversation a line: its key, or its external id if no other has it",
        )
        parser.add_argument("--seed", type=int, help="the draw's seed (with --n)")
        parser.add_argument(
            "--exclude-assigned",
            action="store_true",
            help="only conversations no group has yet (the page's draw); listed ones that "
            "have a group stay in it",
        )

    def handle(self, *args, slug: str, n: int | None, seed: int | None, **options) -> None:
        study = self.get_study(slug)
        by_name = {name: get_group(study, name) for name in options["group"]}
        groups = sorted(by_name.values(), key=lambda g: g.name)
        exclude = options["exclude_assigned"]
        if n is not None:
            if seed is None:
                raise CommandError(
                    "--n needs --seed S: the same seed over the same conversations draws the "
                    "same ones, so the draw can be repeated and reported"
                )
            if n < 1 or seed < 0:
                raise CommandError("--n must be at least 1 and --seed at least 0")
        elif seed is not None:
            raise CommandError("--seed goes with --n (a random draw)")
        listed = self._listed(study, options["ids"]) if options["ids"] else None
        try:
            with transaction.atomic():
                if n is not None:
                    result = draw(study, groups, n, seed, unassigned_only=exclude)
                elif listed is None:
                    result = assign_every(study, groups, unassigned_only=exclude)
                elif exclude:
                    result = assign_selection(groups, listed, what="listed")
                else:
                    result = assign_calibration(groups, listed, what="listed")
                    result.message = (
                        f"Assigned {result.done} listed conversations ({result.turns} turns) "
                        f"to {names(groups)}; {len(listed) - result.done} were there already."
                    )
        except AssignRefused as e:
            raise CommandError(f"{e} Nothing assigned.") from None
        except SeatConflict as e:
            raise CommandError(f"Nothing assigned: {e}.") from None
        message = result.message
        shared = 0 if exclude else shared_with_others(result.ids, groups)
        if shared:
            message += (
                f" {shared} of them are assigned to other groups too (shared: each group "
                "runs its own rounds on them)."
            )
        self.stdout.write(message)
        if options["verbosity"] >= 1:
            self._print_ids(result.ids)

    def _print_ids(self, ids: list[int]) -> None:
        for i in range(0, len(ids), 2000):
            rows = Conversation.objects.filter(pk__in=ids[i : i + 2000]).order_by("pk")
            for key in rows.values_list("key", flat=True):
                self.stdout.write(f"  {key}")

    def _listed(self, study, file: str) -> list[int]:
        """The conversations FILE names, one external id a line (blank lines skipped);
        CommandError naming the file and each bad line, and nothing is assigned."""
        path = Path(file)
        # every listed id names another conversation of the study, so a much longer list
        # is mostly bad lines: reading stops there, whatever the file's size
        limit = Conversation.objects.filter(study=study).visible().count() + MAX_ERRORS
        try:
            listed, errors, stopped = read_ids(path, limit)
        except OSError as e:
            raise CommandError(f"cannot read {file}: {e.strerror or e}; nothing assigned") from None
        if len(listed) > limit:
            raise CommandError(
                f"{file} lists more ids than study {study.slug} has conversations "
                f"({limit - MAX_ERRORS}) by over {MAX_ERRORS}: reading stopped at line "
                f"{stopped}; nothing assigned"
            )
        ids, unknown = find_listed(study, listed)
        errors = sorted(errors + unknown)
        if errors:
            shown = [f"{file}:{line}: {why}" for line, why in errors[:MAX_SHOWN]]
            if len(errors) > MAX_SHOWN:
                shown.append(f"... and {len(errors) - MAX_SHOWN} more")
            if stopped:
                shown.append(f"(reading stopped at line {stopped})")
            raise CommandError(
                f"{len(errors)} bad line{'s' if len(errors) != 1 else ''} in {file}; nothing "
                "assigned:\n" + "\n".join(shown)
            )
        if not ids:
            raise CommandError(f"{file} lists no conversation id; nothing assigned")
        return ids


def read_ids(path: Path, limit: int) -> tuple[list[tuple[int, str]], list, int]:
    """((line, id) of each non-blank line, (line, why) of each line that cannot be an id,
    and the line reading stopped at: 0 at the end of the file, else past `limit` ids or
    MAX_ERRORS bad lines). A line is read at most MAX_LINE bytes at a time."""
    listed: list[tuple[int, str]] = []
    errors: list[tuple[int, str]] = []
    with path.open("rb") as f:
        number = 0
        while raw := f.readline(MAX_LINE):
            number += 1
            if not raw.endswith(b"\n") and len(raw) == MAX_LINE:
                while (more := f.readline(MAX_LINE)) and not more.endswith(b"\n"):
                    pass  # the rest of a line too long to be an id
                errors.append((number, f"longer than {MAX_ID} characters: not an id"))
            else:
                try:
                    text = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
                except UnicodeDecodeError as e:
                    errors.append((number, f"not UTF-8 text (byte {e.start + 1})"))
                    continue
                if len(text) > MAX_ID:
                    errors.append((number, f"longer than {MAX_ID} characters: not an id"))
                elif text:
                    listed.append((number, text))
            if len(listed) > limit or len(errors) >= MAX_ERRORS:
                return listed, errors, number
    return listed, errors, 0
