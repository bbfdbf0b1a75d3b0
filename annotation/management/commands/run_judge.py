"""python manage.py run_judge SLUG --judge NAME [--group G] [--units cards|episodes]
    [--conversations FILE | --sample N --seed S] [--model M] [--prompt FILE]
    [--temperature T] [--max-calls N] [--max-tokens N] [--threshold X] [--dry-run]
    [--run NAME] [--min-confidence X]
python manage.py run_judge SLUG --rethreshold RUN_ID X

Runs a machine judge over a group's cards or episodes in this process, as a JUDGE job
(annotation/actions/judges.py): NAME is `llm-annotate` (the configured model, CARDSORT_LLM_*)
or a rule-based detector's name, on cards; on episodes (annotation/actions/judge_episodes.py)
`llm-extract [--run NAME] [--min-confidence X]` writes a session's episodes as an extraction
run, `llm-validate --run NAME` judges that run's episodes, and `llm-annotate --units episodes
[--run NAME]` labels them. Its labels are its pseudo-user's round-1 labels (seated as
the group's judge; they never vote), its scores kept apart. `--dry-run` prints the estimate
of calls and tokens and saves it as a planned run, calling nothing. Past its budget
(`--max-calls`, `--max-tokens`) the run stops; the same command with a larger budget resumes
it, and a re-run skips the cards already scored. `--rethreshold RUN_ID X` writes a run's
labels again from its kept scores at threshold X, without a call."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.actions.judges import (
    MAX_PROMPT_CHARS,
    JudgeRefused,
    RunRequest,
    estimate_line,
    execute_job,
    judge_names,
    prepare,
    rethreshold,
    summary,
)
from annotation.management.study_command import StudyCommand, read_file_option
from annotation.models import Job, JobKind, JudgeRun, JudgeRunStatus

MAX_FILE_BYTES = 10_000_000


class Command(StudyCommand):
    help = "Run a machine judge (an LLM judge or a detector) over a group's cards or episodes."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", help="llm-annotate or a detector's name")
        parser.add_argument("--group", default="", help="the group (default: the only one)")
        parser.add_argument("--units", default="cards", help="cards or episodes")
        parser.add_argument(
            "--run",
            default="",
            help="extraction run: llm-extract's to write, llm-validate's to judge, "
            "llm-annotate --units episodes' to label",
        )
        parser.add_argument(
            "--min-confidence", type=float, help="llm-extract: drop episodes under X"
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--conversations", metavar="FILE", help="conversation ids, one a line")
        which.add_argument("--sample", type=int, help="a random sample of N conversations")
        parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
        parser.add_argument("--model", default="", help="default CARDSORT_LLM_MODEL")
        parser.add_argument("--prompt", metavar="FILE", help="the system prompt (UTF-8 text)")
        parser.add_argument("--temperature", type=float, default=0.0, help="default 0")
        parser.add_argument("--max-calls", type=int, help="stop after N model calls")
        parser.add_argument("--max-tokens", type=int, help="stop after N tokens")
        parser.add_argument("--threshold", type=float, default=0.5, help="label at or over it")
        parser.add_argument("--dry-run", action="store_true", help="estimate only, call nothing")
        parser.add_argument(
            "--rethreshold", nargs=2, metavar=("RUN_ID", "X"), help="relabel a run at X"
        )

    def handle(self, *args, slug: str, **options):
        study = self.get_study(slug)
        if options["rethreshold"]:
            return self.rethreshold(study, *options["rethreshold"])
        if not options["judge"]:
            raise CommandError(f"--judge: name a judge ({', '.join(judge_names())})")
        try:
            run = prepare(study, self.request(options))
        except JudgeRefused as exc:
            raise CommandError(f"--{exc.field.replace('_', '-')}: {exc.message}") from None
        if options["dry_run"]:
            self.stdout.write(f"{estimate_line(run)} (planned run #{run.pk}).")
            return
        job = Job.objects.create(
            study=study, kind=JobKind.JUDGE, params={"run": run.pk, "via": "command"}
        )
        job.claim_run()
        estimate = run.counts["estimate"]
        job.start(total=estimate.get("units", estimate.get("cards", 0)))
        try:
            execute_job(job, self.progress)
        except BaseException:
            # interrupted (Ctrl-C): the run stops where it is; the same command resumes it
            JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRunStatus.STOPPED)
            job.fail("interrupted")
            raise
        run.refresh_from_db()
        job.refresh_from_db()
        for line in run.counts.get("error_lines", []):
            self.stderr.write(line)
        self.stdout.write(f"Run #{run.pk}: {summary(run)}")
        if run.status == JudgeRunStatus.FAILED:
            raise CommandError(f"Run #{run.pk} failed: {job.error or run.counts.get('stopped')}")

    def request(self, options) -> RunRequest:
        prompt = None
        if options["prompt"]:
            data = read_file_option(options["prompt"], "--prompt", MAX_PROMPT_CHARS * 4)
            try:
                prompt = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CommandError(
                    f"--prompt: {options['prompt']} is not UTF-8 text ({exc.reason})"
                ) from None
        conversations = None
        if options["conversations"]:
            path = options["conversations"]
            try:
                text = read_file_option(path, "--conversations", MAX_FILE_BYTES).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CommandError(
                    f"--conversations: {path} is not UTF-8 text ({exc.reason})"
                ) from None
            conversations = [line.strip() for line in text.splitlines()]
            blank = [n for n, line in enumerate(conversations, 1) if not line]
            if blank:
                raise CommandError(f"--conversations: {path}:{blank[0]}: a blank line")
        return RunRequest(
            judge=options["judge"],
            group=options["group"],
            units=options["units"],
            conversations=conversations,
            conversations_file=options["conversations"] or "",
            sample=options["sample"],
            seed=options["seed"],
            model=options["model"],
            prompt=prompt,
            temperature=options["temperature"],
            max_calls=options["max_calls"],
            max_tokens=options["max_tokens"],
            threshold=options["threshold"],
            run=options["run"],
            min_confidence=options["min_confidence"],
        )

    def rethreshold(self, study, run_id: str, value: str) -> None:
        try:
            run = JudgeRun.objects.get(study=study, pk=int(run_id))
        except (ValueError, JudgeRun.DoesNotExist):
            raise CommandError(
                f"--rethreshold: study {study.slug} has no judge run {run_id!r}"
            ) from None
        try:
            threshold = float(value)
            done = rethreshold(run, threshold)
        except ValueError as exc:
            raise CommandError(f"--rethreshold: {exc}") from None
        self.stdout.write(
            f"Run #{run.pk} relabelled at threshold {threshold:g}: {done['labelled']} of "
            f"{done['cards']} scored cards labelled with a type; no call made."
        )

    def progress(self, done: int, total: int, message: str = "") -> None:
        if done == total or done % 100 == 0:
            self.stdout.write(f"{done} of {total} {message}")
