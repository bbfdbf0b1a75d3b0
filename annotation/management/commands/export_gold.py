"""python manage.py export_gold SLUG --format csv|jsonl|parquet --output FILE [--round 1]
[--raw] [--with-text] [--blind-for USERNAME] [--unit turn|episode|coverage]"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.exports import (
    EXPORT_FORMATS,
    UNITS,
    is_raw,
    write_coverage,
    write_episodes,
    write_gold,
    write_raw,
)
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Export a study's gold labels: one row per card (conversation, then turn order) with "
        "conversation (the dataset's id, which may repeat) and conversation_key (unique in "
        "the study), split_from and split_first_turn (a part of a split conversation: the "
        "original's key and the original's turn index of the part's turn 1; empty otherwise), "
        "its current consensus (sorted type codes), method (unanimous|discussion|moderator), "
        "decided_by, decided_at (ISO 8601), rationale, from_round, taxonomy_version, status "
        "(open|disputed|escalated|agreed), with --with-text the turn's user_text and "
        "reply_text, and one labels_<username> column per annotator with their labels in "
        "--round (default 1). The consensus columns (consensus to taxonomy_version) are all "
        "null when the card has no current consensus; decided_by and rationale are null "
        "unless a moderator decided. A label set is null when there is no record (no "
        "label, no consensus yet) and [] for 'no smell'. JSONL: one object a line, lists "
        "and null as JSON. CSV: codes joined with '|', '-' for the empty set [], an empty "
        "cell for null; a text cell that begins like a spreadsheet formula (= + - @, tab, "
        "CR) gets a leading apostrophe. Parquet: list<string> columns, nullable int64 "
        "integers (pandas reads them as Int64). Integers are never written as floats; "
        "pandas' read_csv still guesses float64 for a column with empty cells: pass "
        "dtype={'from_round': 'Int64'}. --raw exports every annotation row instead (all "
        "revisions, with is_current). Every label is exported unless --blind-for USERNAME "
        "(what the study page's export does for whoever starts it): that user's fellow "
        "annotators' labels on cards still open in the groups they annotate are left out. "
        "The file appears only once complete: a failed export leaves no partial file. "
        "--unit episode exports the episodes instead (issue 21): one row per episode and "
        "group judging it with the group's consensus (status, validity, valid, "
        "invalid_reason, method, deciding_round, labels) and the run's own verdict "
        "(run_valid, run_invalid_reason, run_labels, confidence); --raw: one row per "
        "judgement. Every row names the episode (episode, run, created_by, conversation, "
        "conversation_key, modality, first_turn, last_turn). --unit coverage: one row per "
        "coverage rating of a session (every rating: there is no gold file of them)."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--format", required=True, choices=EXPORT_FORMATS, dest="fmt")
        parser.add_argument("--output", required=True, help="the file to write")
        parser.add_argument(
            "--round",
            type=int,
            default=None,
            help="the round whose labels fill the labels_<username> columns (default 1); "
            "with --raw, export only this round (default: all rounds)",
        )
        parser.add_argument(
            "--raw",
            action="store_true",
            help="every annotation row (all rounds and revisions) instead of one row per card",
        )
        parser.add_argument(
            "--with-text",
            action="store_true",
            help="add the turn's user message and reply (columns user_text, reply_text)",
        )
        parser.add_argument(
            "--unit",
            choices=UNITS,
            default="turn",
            help="turn: the cards (default); episode: the episodes (one row per episode and "
            "group, or with --raw per judgement); coverage: the sessions' coverage ratings "
            "(every rating: the only file, with or without --raw)",
        )
        parser.add_argument(
            "--blind-for",
            metavar="USERNAME",
            default=None,
            help="leave out what USERNAME may not see: other annotators' labels on the cards "
            "still open (round 1) in the groups USERNAME annotates (default: everything)",
        )

    def handle(
        self,
        *args,
        slug: str,
        fmt: str,
        output: str,
        round: int | None,
        raw: bool,
        with_text: bool,
        blind_for: str | None,
        unit: str = "turn",
        **options,
    ) -> None:
        study = self.get_study(slug)
        raw = is_raw(unit, raw)
        if round is not None and round < 1:
            raise CommandError(f"--round: must be a positive integer, got {round}")
        reader = None
        if blind_for is not None:
            reader = get_user_model().objects.filter(username=blind_for).first()
            if reader is None:
                raise CommandError(f"--blind-for: unknown user {blind_for!r}")
        path = Path(output)
        if not path.parent.is_dir():
            raise CommandError(f"{output}: directory {str(path.parent)!r} does not exist")
        try:
            if unit == "coverage":
                n = write_coverage(study, path, fmt, blind_for=reader)
                what = "coverage ratings"
            elif unit == "episode":
                n = write_episodes(study, path, fmt, raw=raw, round=round, blind_for=reader)
                what = "judgements" if raw else "episode rows"
            elif raw:
                n = write_raw(study, path, fmt, round=round, with_text=with_text, blind_for=reader)
                what = "annotation rows"
            else:
                n = write_gold(
                    study, path, fmt, round=round or 1, with_text=with_text, blind_for=reader
                )
                what = "cards"
        except OSError as e:
            raise CommandError(f"{output}: cannot write: {e.strerror or e}") from e
        self.stdout.write(f"{n} {what} written to {output}")
