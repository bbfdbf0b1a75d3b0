"""python manage.py upgrade_preset SLUG [--dry-run]: move a study on an earlier version of its
preset taxonomy to the preset's latest (annotation/evolution/preset.py): every label,
consensus and study gold carried through the mapping, the old version's rows kept retired."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.evolution import EvolutionError, upgrade_preview, upgrade_study
from annotation.management.study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Move a study to the latest version of its preset taxonomy (e.g. agent-misalignment's "
        "outcome and resolution recast into damage severity and locus, resolution status and "
        "resolver), carrying every label through the version's mapping."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--dry-run", action="store_true", help="say what the move does, change nothing"
        )

    def handle(self, *args, slug: str, **options) -> None:
        study = self.get_study(slug)
        w = self.stdout.write
        try:
            if options["dry_run"]:
                plans = upgrade_preview(study)
                if not plans:
                    w(f"{study.slug} is on its preset's latest version ({study.taxonomy_version})")
                for plan in plans:
                    w(f"-> {plan['to_version']}")
                    for key, value in (plan.get("counts") or {}).items():
                        w(f"  {key}: {value}")
                return
            moves = upgrade_study(study)
        except EvolutionError as e:
            raise CommandError(str(e)) from None
        if not moves:
            w(f"{study.slug} is on its preset's latest version ({study.taxonomy_version})")
        for move in moves:
            counts = move.counts
            w(
                f"{study.slug}: {move.from_version} -> {move.to_version}: "
                f"{counts['annotations']} annotations ({counts['annotations_recoded']} recoded, "
                f"{counts['annotations_pending']} waiting for a split side), "
                f"{counts['consensus']} consensus, {counts['study_gold']} study gold carried"
            )
