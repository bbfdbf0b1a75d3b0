"""python manage.py sample_size --population N [--confidence 0.95] [--margin 0.05]
[--proportion 0.5]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.intake.sampling import describe, size_for


class Command(BaseCommand):
    help = (
        "Print the sample size for a population: Cochran's formula with the finite population "
        "correction, rounded up, and the formula's inputs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--population", type=int, required=True, help="conversations (N)")
        parser.add_argument("--confidence", type=float, default=0.95, help="default 0.95")
        parser.add_argument("--margin", type=float, default=0.05, help="default 0.05 (±5%%)")
        parser.add_argument("--proportion", type=float, default=0.5, help="default 0.5 (p)")

    def handle(self, *args, population, confidence, margin, proportion, **options):
        try:
            size = size_for(population, confidence, margin, proportion)
        except ValueError as exc:
            raise CommandError(str(exc).replace("population", "--population", 1)) from None
        self.stdout.write("\n".join(describe(size)))
