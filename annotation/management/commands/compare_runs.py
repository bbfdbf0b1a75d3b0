"""python manage.py compare_runs SLUG RUN_A RUN_B [--iou 0.5] [--json]: two extraction
runs' episodes matched per conversation (annotation/episodes/measures.py, compare_runs)."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from annotation.episodes.report import UnknownRun, compare
from annotation.management.study_command import StudyCommand


def _share(cell) -> str:
    return "-" if cell is None else f"{cell['count']} ({cell['share']:.1%})"


class Command(StudyCommand):
    help = (
        "Compare two extraction runs: episodes matched per conversation on turn-range IoU "
        "(a maximum matching, then greatest total IoU), the IoU distribution, the unmatched "
        "on each side and the runs' axis distributions side by side."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("run_a")
        parser.add_argument("run_b")
        parser.add_argument("--iou", type=float, default=0.5, help="IoU threshold (0.5)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, slug: str, run_a: str, run_b: str, **options) -> None:
        study = self.get_study(slug)
        if not 0 < options["iou"] <= 1:
            raise CommandError(f"--iou: must be in (0, 1], got {options['iou']}")
        try:
            r = compare(study, run_a, run_b, options["iou"])
        except UnknownRun as e:
            raise CommandError(str(e)) from None
        if options["json"]:
            self.stdout.write(json.dumps(r, indent=2, sort_keys=True))
            return
        w = self.stdout.write
        w(f"{run_a}: {r['episodes_a']} episodes; {run_b}: {r['episodes_b']} episodes")
        w(
            f"matched {r['matched']} (IoU >= {r['iou_threshold']}, {r['matching']}); "
            f"unmatched {r['unmatched_a']} of {run_a}, {r['unmatched_b']} of {run_b}"
        )
        if r["matched"]:
            w(f"IoU of the matched: mean {r['iou_mean']:.3f}, median {r['iou_median']:.3f}")
        for axis, rows in r["axes"].items():
            w(f"{axis}: code  {run_a}  {run_b}")
            for row in rows:
                w(f"  {row['code']}  {_share(row['a'])}  {_share(row['b'])}")
