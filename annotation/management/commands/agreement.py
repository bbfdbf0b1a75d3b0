"""python manage.py agreement SLUG [--round 1] [--json] [--seed 0] [--bootstrap 1000]"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from annotation.agreement.data import compute_study_report
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Print a study's agreement report (AGREEMENT.md) for one round: the same numbers as "
        "the agreement job and GET /api/studies/SLUG/agreement/. --json prints the whole "
        "result as JSON (undefined values are null with a sibling <key>_reason); without "
        "it, a summary per axis: cards, pair kappas with bootstrap 95% intervals, group "
        "means, Krippendorff's alpha and the prevalence of each label in the consensus."
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
            help="bootstrap resamples for the kappa intervals (default 1000; 0 = none)",
        )

    def handle(self, *args, slug: str, round: int, seed: int, bootstrap: int, **options) -> None:
        study = self.get_study(slug)
        if round < 1:
            raise CommandError(f"--round: must be a positive integer, got {round}")
        if bootstrap < 0:
            raise CommandError(f"--bootstrap: must be 0 or more, got {bootstrap}")
        result = compute_study_report(study, round=round, n_boot=bootstrap, seed=seed)
        if options["json"]:
            self.stdout.write(json.dumps(result, allow_nan=False, indent=2))
        else:
            self.stdout.write(summary(result))


def _num(value, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def _label(report: dict, key: str, code: str) -> str:
    """A per-label value; "n/a" where the statistic does not apply (Fleiss with 2 raters)."""
    value = report[key][code]
    reason = report.get(f"{key}_reason", {}).get(code, "")
    return "n/a" if value is None and reason.startswith("not applicable") else _num(value)


def _fleiss(report: dict) -> str:
    value, reason = report["fleiss_kappa"], report.get("fleiss_kappa_reason", "")
    if value is not None or not reason.startswith("not applicable: "):
        return _num(value)
    text = f"n/a ({reason.removeprefix('not applicable: ')})"
    if report.get("fleiss_kappa_complete_cards") is not None:
        text += (
            f"; on the {report['n_complete_cards']} cards everyone rated: "
            f"{_num(report['fleiss_kappa_complete_cards'])}"
        )
    return text


def _ci(entry: dict, key: str) -> str:
    ci = entry.get(f"{key}_ci")
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def summary(result: dict) -> str:
    lines = [
        f"Study {result['study']}, round {result['round']}, taxonomy {result['taxonomy_version']}"
        f" (computed {result['computed_at']})"
    ]
    for axis, entry in result["axes"].items():
        r = entry["report"]
        lines += [
            "",
            f"Axis {axis}: {r['n_cards']} cards, {r['n_annotators']} annotators, "
            f"{r['n_annotations']} records, {r['n_pairable_cards']} pairable cards",
        ]
        if r["pairs"]:
            lines.append("  Pairs (kappa with bootstrap 95% CI):")
        for name, p in r["pairs"].items():
            lines.append(
                f"    {name}: {p['n_common_cards']} common cards, "
                f"agreement {_num(p['percent_agreement'])}, "
                f"kappa {_num(p['cohen_kappa'])}{_ci(p, 'cohen_kappa')}, "
                f"per-label macro {_num(p['per_label_kappa_macro'])}, "
                f"micro {_num(p['per_label_kappa_micro'])}"
            )
        g = r["group_mean"]
        lines.append(
            f"  Mean over pairs: kappa {_num(g['cohen_kappa'])}, "
            f"agreement {_num(g['percent_agreement'])}, "
            f"per-label macro {_num(g['per_label_kappa_macro'])}"
        )
        for name, g in r["groups"].items():
            lines.append(
                f"  Group {name}: kappa {_num(g['cohen_kappa'])}{_ci(g, 'cohen_kappa')}, "
                f"agreement {_num(g['percent_agreement'])}"
            )
        lines.append(
            f"  Krippendorff's alpha: nominal {_num(r['krippendorff_alpha_nominal'])}, "
            f"MASI {_num(r['krippendorff_alpha_masi'])}; "
            f"Fleiss' kappa {_fleiss(r)}"
        )
        lines.append(f"  {'Label':<34} {'prevalence':>10} {'alpha':>9} {'Fleiss':>9}")
        for code in r["prevalence"]:
            lines.append(
                f"    {code:<32} {_label(r, 'prevalence', code):>10} "
                f"{_label(r, 'krippendorff_alpha_nominal_per_label', code):>9} "
                f"{_label(r, 'fleiss_kappa_per_label', code):>9}"
            )
    return "\n".join(lines)
