"""python manage.py sample SLUG --n N --seed S [--stratify source,language,turns] [--min-turns 2]
[--replace] [--confidence 0.95 --margin 0.05 --proportion 0.5]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.intake.sampling import SamplingRefused, draw_sample, strata_lines
from annotation.management.study_command import count_or_auto
from annotation.models import Study


class Command(BaseCommand):
    help = (
        "Draw a reproducible random sample that becomes the study's conversation set; the "
        "conversations not drawn are set aside (kept, as the population)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument(
            "--n",
            required=True,
            help="conversations to draw, or 'auto': Cochran's size for --confidence/--margin",
        )
        parser.add_argument("--seed", type=int, required=True)
        parser.add_argument(
            "--stratify", default="", help="comma-separated: source, language, turns"
        )
        parser.add_argument("--min-turns", type=int, default=1, help="population: at least")
        parser.add_argument(
            "--replace", action="store_true", help="replace the study's earlier sample"
        )
        parser.add_argument("--confidence", type=float, help="recorded; with --n: n >= size")
        parser.add_argument("--margin", type=float)
        parser.add_argument("--proportion", type=float)

    def handle(self, *args, slug: str, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        try:
            sample = draw_sample(
                study,
                n=count_or_auto(options["n"], error=ValueError),
                seed=options["seed"],
                stratify=options["stratify"],
                min_turns=options["min_turns"],
                replace=options["replace"],
                confidence=options["confidence"],
                margin=options["margin"],
                proportion=options["proportion"],
            )
        except (SamplingRefused, ValueError) as exc:
            raise CommandError(f"Nothing drawn: {exc}") from None
        self.stdout.write(sample.methods)
        for line in strata_lines(sample):
            self.stdout.write(f"  {line}")
        set_aside = sample.population - sample.n + sample.set_aside_short
        short = sample.set_aside_short
        self.stdout.write(
            f"Set aside {set_aside:,} conversations ({sample.population - sample.n:,} not drawn"
            + (f", {short:,} with fewer than {sample.min_turns} turns" if short else "")
            + "); they stay in the study as the population."
        )
