"""Background jobs (imports, exports, agreement, filters): their kind, state, progress and
result, and how a lost one is found and resumed."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from ..storage import EXPORTS, delete_folder, job_folder
from .corpus import Conversation
from .study import Study


class JobKind(models.TextChoices):
    IMPORT = "import"
    AGREEMENT = "agreement"
    EXPORT = "export"
    SPLIT = "split"  # an LLM proposes where conversations change topic (annotation/intake)
    # the coding filter over the study's conversations: a dry run, or setting aside the ones
    # the rules drop (params: filter, apply; annotation/intake/coding_report.filter_study)
    FILTER = "filter"
    JUDGE = "judge"  # a machine judge's run over a group's cards (annotation/judges)
    # a JSONL of labels imported (importers/annotations.py; params: files, create_members,
    # judge). Until migration 0025, an IMPORT job with params["what"] = "annotations".
    LABEL_IMPORT = "label_import"
    # the lead's time per card, whole-study tables kept for the page (annotation/timing.py
    # times_result; no params): per annotator and type, never per card
    TIMES = "times", "Time per card"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


LOST_JOB_ERROR = (
    "The worker running this job stopped (killed or crashed) before it finished; "
    "start the job again."
)


# A conversation import whose worker was lost is resumed (queued again; the re-run skips what
# is there by fingerprint) until it has started this many times; then it fails, rolled back.
MAX_IMPORT_RUNS = 3


RESUMED_MESSAGE = "Its worker stopped; queued again to resume where it was."


LOST_IMPORT_ERROR = (
    f"The workers running this import stopped (killed or crashed) {MAX_IMPORT_RUNS} times "
    "before it finished; what it had written was removed. Start the import again."
)


# conversations deleted per query when a failed import is rolled back
DELETE_CHUNK = 2000


class JobQuerySet(models.QuerySet):
    def lost(self, older_than: float | None = None):
        """Running jobs whose worker has not given a sign of life for `older_than` seconds
        (default settings.JOB_LOST_SECONDS): a running worker beats every few seconds."""
        seconds = settings.JOB_LOST_SECONDS if older_than is None else older_than
        cutoff = timezone.now() - timedelta(seconds=seconds)
        return self.filter(status=JobStatus.RUNNING).filter(
            Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        )

    def reap_lost(self, older_than: float | None = None, resume=None) -> int:
        """Deal with lost jobs, so a job never stays "running" forever (a SIGKILLed worker, or
        a filesystem broker that does not redeliver the message): a conversation import is
        queued again to resume (Job.resumable; `resume(job)` sends its task once the
        transaction commits: tasks.reap_lost_jobs passes it, models never import tasks), any
        other job is marked failed and what it left half-written is removed. One query when
        nothing is lost; returns how many jobs were reaped."""
        reaped = 0
        for job in self.lost(older_than).only("pk", "kind", "study_id", "params", "started_at"):
            # conditional UPDATE: two pages reaping at once resume, or fail (and clean up), a
            # job once
            running = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING)
            if job.resumable:
                if running.update(status=JobStatus.QUEUED, message=RESUMED_MESSAGE):
                    if resume is not None:
                        transaction.on_commit(lambda job=job: resume(job))
                    reaped += 1
                continue
            error = LOST_IMPORT_ERROR if job.is_conversation_import else LOST_JOB_ERROR
            if running.update(status=JobStatus.FAILED, error=error, finished_at=timezone.now()):
                job.discard_partial_output()
                reaped += 1
        return reaped


class Job(models.Model):
    """A background task with status, progress, a result file and an error message."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=20, choices=JobKind.choices)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    progress = models.PositiveBigIntegerField(default=0)
    total = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    # summary counts (conversations, turns, rejected) and the first rejected records
    result = models.JSONField(default=dict, blank=True)
    result_file = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # the worker's last sign of life while running (JobQuerySet.reap_lost)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if self.status == JobStatus.DONE:
            return 100
        return int(100 * self.progress / self.total) if self.total else 0

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    @property
    def waiting_for_worker(self) -> bool:
        """Queued for longer than a worker takes to pick a job up: say so (doccano's lesson)."""
        if self.status != JobStatus.QUEUED:
            return False
        age = (timezone.now() - self.created_at).total_seconds()
        return age > settings.JOB_WAITING_WARNING_SECONDS

    def start(self, total: int = 0) -> None:
        self.status, self.started_at, self.total = JobStatus.RUNNING, timezone.now(), total
        self.heartbeat_at = self.started_at
        self.save(update_fields=["status", "started_at", "total", "heartbeat_at"])

    def set_progress(self, progress: int, message: str = "", total: int | None = None) -> None:
        self.progress, self.heartbeat_at = progress, timezone.now()
        fields = {"progress": progress, "message": message, "heartbeat_at": self.heartbeat_at}
        if total is not None:
            self.total = fields["total"] = total
        Job.objects.filter(pk=self.pk).update(**fields)

    def beat(self) -> None:
        """A sign of life from the worker, between progress updates."""
        self.heartbeat_at = timezone.now()
        Job.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(
            heartbeat_at=self.heartbeat_at
        )

    def discard_partial_output(self) -> int:
        """Remove what a job that failed or stopped midway left behind: the conversations an
        import had committed batch by batch (how many: the number returned), an export's
        stored file (an export is stored only when complete; a failed one keeps none)."""
        if self.kind == JobKind.EXPORT:
            delete_folder(job_folder(EXPORTS, self.pk))
        elif self.kind == JobKind.IMPORT:
            return self.remove_partial_import()
        return 0

    @property
    def is_conversation_import(self) -> bool:
        return self.kind == JobKind.IMPORT

    @property
    def resumable(self) -> bool:
        """A lost conversation import is run again rather than failed: the importer commits
        batch by batch, each conversation carrying its job, and a re-run skips by
        fingerprint what is there, so it continues where the lost worker stopped. So is a
        lost splitting job (intake/split_run.py keeps its place; the call cache answers what
        it asked). Not forever: a job that kills its worker every time fails after
        MAX_IMPORT_RUNS."""
        again = self.is_conversation_import or self.kind == JobKind.SPLIT
        return again and self.params.get("runs", 0) < MAX_IMPORT_RUNS

    def claim_run(self) -> bool:
        """Take this job for a run, counting runs in params["runs"]: a conditional UPDATE on
        the status and heartbeat read, so of two deliveries of one message (or a redelivery
        while a live worker still beats), one runs the job. False: someone else has it."""
        params = {**self.params, "runs": self.params.get("runs", 0) + 1}
        now = timezone.now()
        claimed = Job.objects.filter(
            pk=self.pk, status=self.status, heartbeat_at=self.heartbeat_at
        ).update(status=JobStatus.RUNNING, heartbeat_at=now, params=params)
        if claimed:
            self.status, self.heartbeat_at, self.params = JobStatus.RUNNING, now, params
        return bool(claimed)

    def remove_partial_import(self) -> int:
        """Roll back what this job wrote: exactly its conversations (Conversation.import_job),
        in chunks so a large partial import never sits in memory. A job that is not done is
        invisible (ConversationQuerySet.visible), so nothing of it can have been assigned or
        labelled. Called when an import fails or is given up as lost."""
        written = Conversation.objects.filter(import_job=self)
        removed = 0
        while chunk := list(written.values_list("pk", flat=True)[:DELETE_CHUNK]):
            _, per_model = Conversation.objects.filter(pk__in=chunk).delete()
            removed += per_model.get("annotation.Conversation", 0)
        return removed

    def finish(self, result: dict | None = None, result_file: str = "") -> None:
        self.status, self.finished_at = JobStatus.DONE, timezone.now()
        self.result = result or {}
        self.result_file = result_file
        self.progress = self.total
        fields = ["status", "finished_at", "result", "result_file", "progress", "total"]
        self.save(update_fields=fields)

    def fail(self, error: str, result: dict | None = None, result_file: str = "") -> None:
        self.status, self.finished_at, self.error = JobStatus.FAILED, timezone.now(), error
        if result is not None:
            self.result = result
        self.result_file = result_file
        self.save(update_fields=["status", "finished_at", "error", "result", "result_file"])
