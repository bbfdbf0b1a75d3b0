"""A Celery worker SIGKILLed in the middle of a job, as production runs it (prefork pool,
PostgreSQL, Redis): acks_late with reject_on_worker_lost puts back the message of a pool
process that died, and a worker killed outright leaves a job that the next worker reaps at
startup (tasks.reap_lost_jobs_on_startup). Either way the job ends once, and nothing of it
is visible half-written: a half-done import's conversations stay out of every page until the
import is done, and an export has no file until it is complete."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

from annotation.models import Annotation, Conversation, Job, JobKind, JobStatus, Kind, Role, Turn
from annotation.tasks import run_export, run_import
from tests import slow_worker
from tests.factories import make_conversation, make_group, make_study, make_user

from .conftest import app_env, log_tail, pool_children, wait_until, worker_command

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N_RECORDS = 6000  # six of the writer's batches of 1000: the kill lands after the first


def database_url() -> str:
    s = connection.settings_dict
    host, port = s["HOST"] or "127.0.0.1", s["PORT"] or 5432
    return f"postgres://{s['USER'] or 'postgres'}@{host}:{port}/{s['NAME']}"


def wildchat(n: int) -> str:
    lines = []
    for i in range(n):
        conversation = [
            {"role": "user", "content": f"write function {i}", "turn_identifier": 1},
            {"role": "assistant", "content": f"def f{i}(): return {i}", "turn_identifier": 1},
        ]
        lines.append(json.dumps({"conversation_hash": f"{i:032x}", "conversation": conversation}))
    return "\n".join(lines) + "\n"


def queue_import(study, media: Path) -> Job:
    """What the import page does: the upload stored under MEDIA_ROOT and the task queued."""
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, params={"format": "wildchat"})
    relative = Path("imports", str(job.pk), "big.jsonl")
    (media / relative).parent.mkdir(parents=True)
    (media / relative).write_text(wildchat(N_RECORDS))
    job.params.update(files=[{"path": str(relative), "name": "big.jsonl"}], filter="")
    job.save(update_fields=["params"])
    run_import.delay(job.pk)
    return job


def test_a_worker_killed_mid_import_shows_nothing_half_done_and_the_next_worker_finishes_it(
    processes, media, client
):
    study = make_study("faults")
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    # a short lost threshold, so the next worker's startup reaps the job at once
    env = app_env(database_url(), settings.DATA_DIR, JOB_LOST_SECONDS="2")
    first = processes.start("worker", worker_command(f"first-{uuid.uuid4().hex[:6]}@%h"), env)
    job = queue_import(study, media)
    written = Conversation.objects.filter(study=study)
    wait_until(lambda: written.count() >= 1000, 240, "the first batch", first)
    processes.kill_group(first)  # SIGKILL the main process and its pool process at once
    first.wait(timeout=10)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, f"{job.status}: the kill came too late"
    half = written.count()
    assert 1000 <= half < N_RECORDS
    # invisible: not on the lead's conversations page, not to be assigned, not a card
    assert Conversation.objects.filter(study=study).visible().count() == 0
    assert Turn.objects.filter(conversation__study=study).visible().count() == 0
    client.force_login(lead)
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert f"{0:032x}" not in page and "write function 0" not in page

    second = processes.start("worker", worker_command(f"second-{uuid.uuid4().hex[:6]}@%h"), env)
    wait_until(lambda: Job.objects.get(pk=job.pk).is_finished, 240, "the resumed import", second)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, f"{job.error}\n{log_tail(second)}"
    assert job.params["runs"] == 2, "resumed once, by the second worker"
    assert job.result["conversations"] + job.result.get("already_imported", 0) >= N_RECORDS
    visible = Conversation.objects.filter(study=study).visible()
    assert visible.count() == N_RECORDS, "every record once: the resumed run skipped the rest"
    assert visible.values("external_id").distinct().count() == N_RECORDS


@pytest.fixture
def labelled_study():
    study = make_study("exported")
    alice, bob = make_user("alice"), make_user("bob")
    group = make_group(study, "g", [alice, bob])
    smell = study.taxonomy_version.types_by_code()["ambiguous_instruction"]
    for i in range(40):
        for turn in make_conversation(study, f"c{i}", n_turns=5, group=group).turns.all():
            Annotation.submit(turn=turn, group=group, annotator=alice, types=[smell])
    return study


def test_a_killed_pool_process_gives_its_export_back_and_the_worker_runs_it_again(
    processes, media, labelled_study
):
    env = app_env(database_url(), settings.DATA_DIR)
    command = worker_command(f"pool-{uuid.uuid4().hex[:6]}@%h")
    # 200 rows: about 10 s
    worker = processes.start("worker", slow_worker.worker_command(0.05, command), env)
    job = Job.objects.create(
        study=labelled_study, kind=JobKind.EXPORT, params={"format": "csv", "raw": False}
    )
    run_export.delay(job.pk)

    def started() -> bool:
        job.refresh_from_db()
        return job.status == JobStatus.RUNNING and job.progress > 0

    wait_until(started, 120, "the export to start", worker)
    children = pool_children(worker)
    assert len(children) == 1, children
    os.kill(children[0], signal.SIGKILL)  # the OOM killer's way: the pool process only
    folder = Path(settings.MEDIA_ROOT) / "exports" / str(job.pk)
    assert not (folder / "exported-gold.csv").exists()

    wait_until(lambda: Job.objects.get(pk=job.pk).is_finished, 180, "the re-run export", worker)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, f"{job.error}\n{log_tail(worker)}"
    assert "WorkerLostError" in Path(worker.log_path).read_text(), "the kill was seen"
    lines = (Path(settings.MEDIA_ROOT) / job.result_file).read_text().splitlines()
    assert len(lines) == 1 + 200 and job.result["rows"] == 200
    assert [p.name for p in folder.iterdir()] == ["exported-gold.csv"], "nothing else stored"
    assert worker.poll() is None, "the worker itself lives on"
