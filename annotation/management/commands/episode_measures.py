"""python manage.py episode_measures SLUG [--run NAME] [--by FIELD] [--iou X] [--json]:
the episode study's figures (annotation/episodes/report.py): per run, coverage, agreement,
co-occurrence over gold, overall and per stratum of a conversation metadata field."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError

from annotation.episodes.measures import heatmap_svg
from annotation.episodes.report import UnknownRun, episode_measures
from annotation.management.study_command import StudyCommand


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _num(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


class Command(StudyCommand):
    help = (
        "The episode measures of a study: per extraction run (extracted, dropped, valid and "
        "invalid by consensus, retention, precision with a Wilson 95% interval, invalid "
        "reasons), coverage, agreement per axis, co-occurrence over gold; --by a conversation "
        "metadata field splits every figure by its values."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--run", help="one run only (default: every run)")
        parser.add_argument("--by", help="a conversation metadata field, e.g. modality, model")
        parser.add_argument("--iou", type=float, default=0.5, help="IoU threshold (0.5)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument(
            "--heatmap",
            metavar="FOLDER",
            help="write each co-occurrence table's lifts as an SVG heat map there "
            "(symptom_x_symptom.svg, symptom_x_cause.svg; overall figures)",
        )

    def handle(self, *args, slug: str, **options) -> None:
        study = self.get_study(slug)
        if not 0 < options["iou"] <= 1:
            raise CommandError(f"--iou: must be in (0, 1], got {options['iou']}")
        try:
            result = episode_measures(study, options["run"], options["by"], options["iou"])
        except UnknownRun as e:
            raise CommandError(str(e)) from None
        if options["heatmap"]:
            self.write_heatmaps(Path(options["heatmap"]), result["overall"]["cooccurrence"])
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        self.write_figures("all conversations", result["overall"])
        for value, figures in result.get("strata", {}).items():
            self.write_figures(f"{result['by']} = {value}", figures)

    def write_heatmaps(self, folder: Path, tables: dict) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name, table in tables.items():
                (folder / f"{name}.svg").write_text(heatmap_svg(table), encoding="utf-8")
        except OSError as e:
            raise CommandError(f"--heatmap: cannot write to {folder}: {e}") from None

    def write_figures(self, title: str, f: dict) -> None:
        w = self.stdout.write
        w(f"== {title} ({f['conversations']} conversations)")
        for name, r in f["runs"].items():
            p = r["precision"]
            w(
                f"run {name}: {r['extracted']} extracted, {r['dropped_confidence']} dropped "
                f"for confidence, {r['imported']} imported; by consensus {r['valid']} valid, "
                f"{r['invalid']} invalid, {r['disputed']} disputed, {r['unjudged']} unjudged"
            )
            w(
                f"  retention {_pct(r['retention'])}; precision {_pct(p['value'])} "
                f"[{_pct(p['low'])}, {_pct(p['high'])}] (n={p['n']}, Wilson 95%)"
            )
            for reason, s in r["invalid_reasons"].get("reasons", {}).items():
                w(f"  invalid: {reason} {_pct(s['share'])}")
        c = f["coverage"]
        rating = c["rating"]
        w(
            f"coverage: mean {_num(rating['mean'])} of 2 [{_num(rating['low'])}, "
            f"{_num(rating['high'])}] over {rating['n']} sessions; people's episodes matched "
            f"by an extracted one: {c['matched_by_extracted']} of {c['people_episodes']} "
            f"({_pct(c['matched_share'])}, IoU >= {c['iou_threshold']})"
        )
        a = f["agreement"]
        for axis, s in a["axes"].items():
            w(
                f"agreement {axis}: kappa {_num(s['kappa'])}, alpha {_num(s['alpha'])}, "
                f"exact {_pct(s['exact'])}"
            )
        w(f"whole-episode exact match: {_pct(a['exact_match_all_axes'])}")
        for name, table in f["cooccurrence"].items():
            top = sorted(
                (x for x in table["cells"] if x["lift"] is not None and x["observed"]),
                key=lambda x: -x["lift"],
            )[:5]
            w(f"{name} over {table['episodes']} gold episodes (highest lift):")
            for x in top:
                w(
                    f"  {x['row']} x {x['col']}: {x['observed']} observed, "
                    f"{x['expected']:.1f} expected, lift {x['lift']:.2f}, {x['test']} "
                    f"p={_num(x['p'], 3)}"
                )
