"""python manage.py filter_study SLUG --filter coding [--dry-run] [--bring-back]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.intake.coding_report import bring_back_filtered, report_lines
from annotation.models import Job, JobKind, JobStatus, Study
from annotation.tasks import run_filter_study


class Command(BaseCommand):
    help = (
        "Apply the study's coding rules to its current conversations (never to ones already "
        "set aside): the ones they drop are set aside as 'filtered' (kept, reversible with "
        "--bring-back). --dry-run counts exactly what the real run does and changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument(
            "--filter",
            required=True,
            choices=["coding"],
            help="the filter: coding (the study's coding rules, the lead's Coding filter page)",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, set nothing aside")
        parser.add_argument(
            "--bring-back",
            action="store_true",
            help="put every conversation the filter set aside back in the set instead",
        )

    def handle(self, *args, slug: str, dry_run: bool, bring_back: bool, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if bring_back:
            if dry_run:
                raise CommandError("--bring-back and --dry-run do not go together")
            n = bring_back_filtered(study)
            self.stdout.write(f"{n} filtered conversation(s) back in the study's set.")
            return
        # a job like the page's (stored, listed on the study's pages), run here and now
        params = {"filter": "coding", "apply": not dry_run, "via": "command"}
        job = Job.objects.create(study=study, kind=JobKind.FILTER, params=params)
        run_filter_study(job.pk)
        job.refresh_from_db()
        if job.status != JobStatus.DONE:
            raise CommandError(f"the coding filter failed (job {job.pk}): {job.error}")
        for line in report_lines(job.result["filter"]):
            self.stdout.write(line)
