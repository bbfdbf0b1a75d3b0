"""python manage.py agreement SLUG [--round 1] [--json] [--seed 0] [--bootstrap 1000]
[--taxonomy-version N] [--dev-share 0.3] [--by FIELD] [--save]"""

from __future__ import annotations

import json
import re

from django.core.management.base import CommandError
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.agreement.judge_data import DEV_SHARE
from annotation.agreement.render import to_text
from annotation.agreement.spec import taxonomy_entries
from annotation.jobs import record_run
from annotation.management.study_command import StudyCommand
from annotation.models import JobKind

BY = re.compile(r"[\w.-]{1,64}(:month)?")  # as the agreement form's `by`


class Command(StudyCommand):
    help = (
        "Print a study's agreement report (AGREEMENT.md) for one round: the same numbers as "
        "the agreement job and GET /api/studies/SLUG/agreement/. --json prints the whole "
        "result as JSON (undefined values are null with a sibling <key>_reason); without "
        "it, a summary per axis with the report page's numbers (annotation/agreement/tables.py): "
        "cards, Krippendorff's alpha, group and pair kappas with bootstrap 95% intervals, "
        "each team's mean of its groups' kappas, per type the prevalence in the consensus "
        "and the pairs' kappas, each annotator against the consensus (with intervals over "
        "conversations), and the taxonomy table. --taxonomy-version N computes it on an "
        "earlier taxonomy version the study moved away from (its labels as they stood). "
        "With judge runs (run_judge), round 1 also scores each judge against the gold "
        "beside the annotators; a scored judge's threshold is chosen on a development "
        "share of the conversations (--dev-share, split with --seed) and reported on the rest. "
        "A study with episodes also gets their measures (per run, coverage, agreement, "
        "co-occurrence, the runs compared); --by FIELD repeats each per value of that "
        "conversation metadata field (FIELD:month: per month of a date field)."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--round", type=int, default=1, help="the round (default 1)")
        parser.add_argument("--json", action="store_true", help="print the JSON result")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
        parser.add_argument(
            "--bootstrap",
            type=int,
            default=1000,
            help=(
                "bootstrap resamples for the intervals: the kappas' (over cards) and the "
                "annotators' against the consensus (over conversations); default 1000, 0 = none"
            ),
        )
        parser.add_argument(
            "--dev-share",
            dest="dev_share",
            type=float,
            default=DEV_SHARE,
            help=(
                "the share of conversations (split with --seed) on which a scored judge's "
                f"threshold is chosen, the rest scoring it (default {DEV_SHARE})"
            ),
        )
        parser.add_argument(
            "--taxonomy-version",
            dest="taxonomy_version",
            type=int,
            default=None,
            help="the taxonomy version number (default: the study's own)",
        )
        parser.add_argument(
            "--by",
            default=None,
            help=(
                "a conversation metadata field (modality, source, model, ...): the episode "
                "measures per value of it; FIELD:month groups a date field by month"
            ),
        )
        parser.add_argument(
            "--save",
            action="store_true",
            help="keep the result as the study's agreement job, as 'Compute agreement' does "
            "(the report page and `methods` read the latest one)",
        )

    def handle(
        self,
        *args,
        slug: str,
        round: int,
        seed: int,
        bootstrap: int,
        taxonomy_version,
        dev_share: float,
        by: str | None = None,
        **options,
    ) -> None:
        study = self.get_study(slug)
        if round < 1:
            raise CommandError(f"--round: must be a positive integer, got {round}")
        if bootstrap < 0:
            raise CommandError(f"--bootstrap: must be 0 or more, got {bootstrap}")
        if not 0 < dev_share < 1:
            raise CommandError(f"--dev-share: must be between 0 and 1 (exclusive), got {dev_share}")
        if by is not None and not BY.fullmatch(by):
            raise CommandError(
                f"--by: {by!r} is not a metadata field name (letters, digits, _ . -), "
                "optionally followed by :month"
            )
        chosen, version = study.taxonomy_version, taxonomy_version
        if version is not None:
            chosen = study.taxonomy_version.taxonomy.versions.filter(number=version).first()
            if chosen is None:
                raise CommandError(
                    f"--taxonomy-version: {study.taxonomy_version.taxonomy} has no v{version}"
                )
        started_at = timezone.now()
        try:
            result = compute_study_report(
                study,
                round=round,
                n_boot=bootstrap,
                seed=seed,
                version=chosen,
                dev_share=dev_share,
                by=by,
            )
        except ValueError as e:
            raise CommandError(f"--taxonomy-version: {e}") from None
        if options["json"]:
            self.stdout.write(json.dumps(result, allow_nan=False, indent=2))
        else:
            self.stdout.write(to_text(result, taxonomy_entries(chosen)[0]))
        if options["save"]:
            params = {"round": round, "seed": seed, "n_boot": bootstrap, "dev_share": dev_share}
            if version is not None:
                params["version"] = chosen.pk
            if by:
                params["by"] = by
            job = record_run(study, JobKind.AGREEMENT, params, result, started_at=started_at)
            (self.stderr if options["json"] else self.stdout).write(
                f"Saved as the study's agreement job {job.pk}."
            )
