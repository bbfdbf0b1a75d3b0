"""python manage.py split_conversations SLUG [--min-turns 2] [--model M] [--temperature T]
    [--prompt FILE] [--examples FILE] [--seed N] [--max N] [--apply | --apply-only]

Asks the configured model (CARDSORT_LLM_*) where each conversation of the study's set
changes topic and which turns belong to no topic, as a splitting job run in this process
(annotation/intake/split_run.py): progress as it goes, then a summary (asked, split, parts,
dropped turns, errors). `--apply` then splits every conversation with open proposals;
`--apply-only` does only that. A run killed midway is resumed by running the same command
again: it takes up the job where it stopped, and what it had asked comes back from the call
cache. Fails (non-zero exit) when the job fails: the feature is off, no conversation got a
usable answer, or a file given is not usable (every bad line named `file:line: field: why`)."""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from annotation.intake.llm import (
    MAX_EXAMPLES_BYTES,
    MAX_PROMPT_CHARS,
    ExamplesError,
    read_examples,
)
from annotation.intake.split_run import APPLY, ParamsError, SplitParams, execute
from annotation.management.study_command import StudyCommand, read_file_option
from annotation.models import RESUMED_MESSAGE, Job, JobKind, JobStatus
from annotation.tasks import heartbeat

PRINT_EVERY_SECONDS = 2.0


class Command(StudyCommand):
    help = (
        "Ask the model where the study's conversations change topic (split proposals, with "
        "off-topic turns to drop), as the study ran it; --apply splits them."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--min-turns", type=int, default=2, help="ask about conversations of this many turns"
        )
        parser.add_argument("--model", default="", help="the model (default CARDSORT_LLM_MODEL)")
        parser.add_argument("--temperature", type=float, default=0.0, help="default 0")
        parser.add_argument("--prompt", metavar="FILE", help="the system prompt (UTF-8 text)")
        parser.add_argument("--examples", metavar="FILE", help="worked examples (JSONL): few-shot")
        parser.add_argument("--seed", type=int, help="sent with every request")
        parser.add_argument("--max", type=int, help="ask about at most N conversations")
        how = parser.add_mutually_exclusive_group()
        how.add_argument("--apply", action="store_true", help="then apply every open proposal")
        how.add_argument("--apply-only", action="store_true", help="only apply open proposals")

    def handle(self, *args, slug: str, **options):
        study = self.get_study(slug)
        params = self.params(options)
        stored = {**params.as_params(), "via": "command"}  # the methods section says so
        job = self.resumable(study, stored)
        if job is None:
            job = Job.objects.create(study=study, kind=JobKind.SPLIT, params=stored)
            job.claim_run()
        else:
            self.stdout.write(f"Resuming splitting job #{job.pk} where it stopped.")
        job.start(total=job.total)
        try:
            with _heartbeat(job):
                execute(job, self.progress)
        except Exception as exc:
            job.fail(f"{type(exc).__name__}: {exc}")
            raise CommandError(f"Splitting job #{job.pk} failed: {job.error}") from exc
        except BaseException:
            # interrupted (Ctrl-C): lost at once, so the same command takes it up again
            since = timezone.now() - timedelta(seconds=settings.JOB_LOST_SECONDS + 1)
            Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(heartbeat_at=since)
            raise
        job.refresh_from_db()
        for line in job.result.get("errors", []) + job.result.get("applied", {}).get("errors", []):
            self.stderr.write(line)
        self.write_summary(job)
        if job.status == JobStatus.FAILED:
            raise CommandError(f"Splitting job #{job.pk} failed: {job.error}")

    def params(self, options) -> SplitParams:
        prompt = options["prompt"]
        params = SplitParams(
            min_turns=options["min_turns"],
            model=options["model"],
            temperature=options["temperature"],
            seed=options["seed"],
            max=options["max"],
            apply=options["apply"],
            what=APPLY if options["apply_only"] else "ask",
        )
        if prompt:
            try:
                params.prompt = read_file_option(prompt, "--prompt", MAX_PROMPT_CHARS * 4).decode(
                    "utf-8"
                )
            except UnicodeDecodeError as exc:
                raise CommandError(f"--prompt: {prompt} is not UTF-8 text ({exc.reason})") from None
        if options["examples"]:
            path = options["examples"]
            try:
                params.examples = read_examples(
                    read_file_option(path, "--examples", MAX_EXAMPLES_BYTES), path
                )
            except ExamplesError as exc:
                lines = "\n".join(exc.lines)
                raise CommandError(f"--examples: the file cannot be used:\n{lines}") from None
        try:
            return params.check()
        except ParamsError as exc:
            raise CommandError(f"--{exc.field.replace('_', '-')}: {exc}") from None

    def resumable(self, study, params: dict) -> Job | None:
        """The latest splitting job of these parameters that a killed run left behind (no
        sign of life for JOB_LOST_SECONDS, or queued again by the reaper), claimed."""
        lost = Job.objects.lost().values("pk")
        candidates = study.jobs.filter(kind=JobKind.SPLIT).filter(pk__in=lost) | study.jobs.filter(
            kind=JobKind.SPLIT, status=JobStatus.QUEUED, message=RESUMED_MESSAGE
        )
        for job in candidates.order_by("-created_at", "-id"):
            same = {k: v for k, v in job.params.items() if k != "runs"} == params
            if same and job.claim_run():
                return job
        return None

    def progress(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if done < total and now - getattr(self, "_printed", 0.0) < PRINT_EVERY_SECONDS:
            return
        self._printed = now
        self.stdout.write(f"{done} of {total} {message}")

    def write_summary(self, job: Job) -> None:
        result = job.result
        if "asked" in result:
            request = result["request"]
            self.stdout.write(
                f"Model {request['model']} at {request['host']}, temperature "
                f"{request['temperature']:g}, seed {request['seed']}, "
                f"{request['n_examples']} worked examples"
            )
            self.stdout.write(
                f"asked: {result['asked']} ({result['cached']} from the call cache, "
                f"{result['http_requests']} HTTP requests)"
            )
            self.stdout.write(f"split: {result['split']} (proposed parts: {result['parts']})")
            self.stdout.write(f"proposed dropped turns: {result['drops']}")
            self.stdout.write(f"errors: {result['n_errors']}")
        if applied := result.get("applied"):
            self.stdout.write(
                f"applied: {applied['conversations']} conversations split into "
                f"{applied['parts']} parts; dropped turns: {applied['dropped_turns']}; "
                f"refused: {applied['refused']}"
            )
        if result.get("summary"):
            self.stdout.write(f"Job #{job.pk}: {result['summary']}.")


def _heartbeat(job: Job):
    """Beat while the job runs here, so the pages do not take it for lost during a slow
    request; not inside a transaction (a test's), where a second connection would only
    wait."""
    return heartbeat(job, not connection.in_atomic_block)
