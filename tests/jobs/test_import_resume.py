"""An interrupted import is resumed or rolled back, never left half-visible (issue 10):
every conversation carries its import job and stays invisible until the job is done; a
re-run after a lost worker skips what is there (fingerprints) and continues; a failed job's
rows are deleted, exactly those."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.importers import base as base_module
from annotation.importers import import_files
from annotation.importers import writer as writer_module
from annotation.importers.annotations import import_annotations
from annotation.models import Conversation, Job, JobKind, JobStatus, Kind, Role, Turn
from annotation.tasks import reap_lost_jobs, run_import
from tests.factories import make_conversation, make_group, make_study

pytestmark = pytest.mark.django_db


class Killed(BaseException):
    """What a SIGKILL looks like to the task: nothing after it runs, not even `except`."""


def wildchat(digest: str, user: str, reply: str) -> str:
    conversation = [
        {"role": "user", "content": user, "turn_identifier": 1},
        {"role": "assistant", "content": reply, "turn_identifier": 1},
    ]
    return json.dumps({"conversation_hash": digest, "conversation": conversation, "turn": 1})


# seven records, two of them identical (WildChat hashes repeat: both are imported)
LINES = [wildchat("a" * 32, "same", "same")] * 2 + [
    wildchat(f"{i:032x}", f"question {i}", f"answer {i}") for i in range(5)
]


@pytest.fixture
def upload(media, settings):
    # these tests read the upload again after its job succeeded (clean_import, a second job
    # on the same file): keep it, where a successful import removes its uploads by default
    settings.CARDSORT_UPLOAD_KEEP_DAYS = 1
    folder = media / "imports" / "up"
    folder.mkdir(parents=True)
    (folder / "1-chats.jsonl").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return [{"path": "imports/up/1-chats.jsonl", "name": "chats.jsonl"}]


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)


def import_job(study, files) -> Job:
    params = {"format": "auto", "files": files}
    return Job.objects.create(study=study, kind=JobKind.IMPORT, params=params)


def stop_after_first_batch(monkeypatch, error: BaseException) -> None:
    original = Job.set_progress

    def set_progress(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(Job, "set_progress", set_progress)
    return original


def clean_import(media) -> list[tuple]:
    """The same file imported in one go into another study: what a resumed job must equal."""
    other = make_study("clean")
    import_files(other, [media / "imports/up/1-chats.jsonl"])
    return rows(other)


def rows(study) -> list[tuple]:
    return sorted(
        Turn.objects.filter(conversation__study=study).values_list(
            "conversation__external_id", "conversation__source_line", "user_text", "reply_text"
        )
    )


def test_a_killed_import_is_invisible_and_a_rerun_resumes_it(
    study, upload, media, small_batches, monkeypatch
):
    job = import_job(study, upload)
    stop_after_first_batch(monkeypatch, Killed())
    with pytest.raises(Killed):
        run_import(job.pk)
    monkeypatch.undo()
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # as a killed worker leaves it
    written = Conversation.objects.filter(import_job=job).count()
    assert written == 2  # the first batch was committed
    assert not Conversation.objects.visible().exists()
    assert not Turn.objects.visible().exists()

    run_import(job.pk)  # the redelivered message

    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert job.params["runs"] == 2
    assert rows(study) == clean_import(media)  # nothing twice, nothing lost
    assert (job.result["conversations"], job.result["turns"]) == (7, 7)
    assert job.result["already_imported"] == 0
    assert Conversation.objects.filter(study=study).visible().count() == 7


def test_a_reaped_import_is_queued_again_and_resumed(
    study, upload, media, small_batches, monkeypatch, settings, django_capture_on_commit_callbacks
):
    job = import_job(study, upload)
    stop_after_first_batch(monkeypatch, Killed())
    with pytest.raises(Killed):
        run_import(job.pk)
    monkeypatch.undo()
    stale = timezone.now() - timedelta(minutes=10)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    settings.CELERY_TASK_ALWAYS_EAGER = True

    with django_capture_on_commit_callbacks(execute=True):
        assert reap_lost_jobs(older_than=60) == 1

    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert rows(study) == clean_import(media)


def test_a_failed_import_leaves_nothing(study, upload, small_batches, monkeypatch):
    earlier = make_conversation(study, "earlier")  # the same study, not this job's
    job = import_job(study, upload)
    stop_after_first_batch(monkeypatch, RuntimeError("database went away"))
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "RuntimeError: database went away" in job.error
    assert "the 2 conversations it had written were removed" in job.error
    assert list(Conversation.objects.all()) == [earlier]


def test_an_import_that_crashes_before_writing_says_so_without_a_count(study, upload, monkeypatch):
    import annotation.importers

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(annotation.importers, "import_files", crash)
    job = import_job(study, upload)
    run_import(job.pk)
    job.refresh_from_db()
    assert job.error == "OSError: disk full"


def test_of_two_deliveries_of_one_message_one_runs_the_job(study, upload):
    job = import_job(study, upload)
    first, second = Job.objects.get(pk=job.pk), Job.objects.get(pk=job.pk)
    assert first.claim_run()
    assert not second.claim_run()  # read the job before the first claimed it
    # a redelivery while the running worker still beats: it keeps the job
    redelivered = Job.objects.get(pk=job.pk)
    first.beat()
    assert not redelivered.claim_run()
    assert Job.objects.get(pk=job.pk).params["runs"] == 1


def test_a_re_import_of_nothing_new_is_done_not_failed(client, study, lead, upload, media):
    first = import_job(study, upload)
    run_import(first.pk)
    again = import_job(study, upload)
    run_import(again.pk)
    again.refresh_from_db()
    assert again.status == JobStatus.DONE, again.error
    assert (again.result["conversations"], again.result["already_imported"]) == (0, 7)
    assert Conversation.objects.count() == 7
    client.force_login(lead)
    body = client.get(reverse("job_detail", args=[study.slug, again.pk])).content.decode()
    assert (
        "Imported 0 conversations (0 turns) from 1 file(s); rejected 0 records; "
        "already imported: 7; 7 records read." in body
    )


# -- invisible on the lead's pages -------------------------------------------------------------


@pytest.fixture
def half_imported(study):
    """One conversation of a finished import, one of a running one."""
    done = import_job(study, [])
    done.finish({})
    running = import_job(study, [])
    running.start()
    shown = make_conversation(study, "shown-conversation")
    hidden = make_conversation(study, "hidden-conversation")
    Conversation.objects.filter(pk=shown.pk).update(import_job=done)
    Conversation.objects.filter(pk=hidden.pk).update(import_job=running)
    return shown, hidden, running


def test_the_lead_does_not_see_or_assign_an_unfinished_import(client, study, lead, half_imported):
    shown, hidden, running = half_imported
    group = make_group(study, "g1")
    client.force_login(lead)
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert "shown-conversation" in page and "hidden-conversation" not in page
    browse = client.get(reverse("lead_browse", args=[study.slug])).content.decode()
    assert "shown-conversation" in browse and "hidden-conversation" not in browse
    detail = reverse("lead_conversation", args=[study.slug, hidden.pk])
    assert client.get(detail).status_code == 404

    assign = reverse("lead_assign", args=[study.slug])
    client.post(assign, {"group": [group.pk], "how": "selection", "conversation": [hidden.pk]})
    client.post(assign, {"group": [group.pk], "how": "count", "count": 2, "seed": 1})
    assert not hidden.assignments.exists()
    client.post(assign, {"group": [group.pk], "how": "count", "count": 1, "seed": 1})
    assert list(group.conversations.all()) == [shown]

    split = reverse("lead_split", args=[study.slug, hidden.pk])
    assert client.post(split, {"before": ["2"], "confirm": "1"}).status_code == 404

    partial = client.get(reverse("job_detail", args=[study.slug, running.pk]))
    assert "Its conversations appear when the import is done." in partial.content.decode()

    running.finish({})
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert "hidden-conversation" in page


def test_samples_and_label_imports_leave_an_unfinished_import_alone(study, half_imported, tmp_path):
    shown, hidden, running = half_imported
    assert list(Conversation.objects.sample(1, seed=3)) == [shown]
    with pytest.raises(ValueError):
        Conversation.objects.sample(2, seed=3)
    labels = tmp_path / "labels.jsonl"
    record = {"turn": 1, "annotator": "alice", "labels": [], "group": "g1"}
    labels.write_text(
        json.dumps({**record, "conversation": "hidden-conversation"})
        + "\n"
        + json.dumps({**record, "conversation": "shown-conversation"})
        + "\n"
    )
    report = import_annotations(study, labels, create_members=True)
    assert report.imported == 1
    assert "unknown conversation id 'hidden-conversation'" in report.rejected[0]
    assert not hidden.assignments.exists()


def test_a_failed_import_hides_its_rows_until_they_are_gone(study, half_imported):
    shown, hidden, running = half_imported
    running.fail("boom")
    assert list(Conversation.objects.visible()) == [shown]
    assert running.remove_partial_import() == 1
    assert list(Conversation.objects.all()) == [shown]


# -- the full list of rejected records ---------------------------------------------------------

BAD = ['{"conversation_hash": "x"}', "not json", "[1, 2", '{"id": 5}', "{}"]


@pytest.fixture
def rejected_job(study, media, monkeypatch):
    monkeypatch.setattr(base_module, "MAX_REPORTED", 2)
    folder = media / "imports" / "bad"
    folder.mkdir(parents=True)
    (folder / "1-my_chats.jsonl").write_text("\n".join([LINES[2], *BAD]) + "\n")
    job = import_job(study, [{"path": "imports/bad/1-my_chats.jsonl", "name": "my chats.jsonl"}])
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    return job


def test_the_job_offers_every_rejected_record_as_a_download(client, study, lead, rejected_job):
    job = rejected_job
    assert (job.result["rejected"], len(job.result["errors"])) == (5, 2)
    client.force_login(lead)
    partial = client.get(reverse("job_detail", args=[study.slug, job.pk]), HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    url = reverse("job_download", args=[study.slug, job.pk])
    assert url in body and "Download all 5 rejected records" in body

    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert f"{study.slug}-import-{job.pk}-rejected.txt" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"my chats.jsonl:{n}" for n in range(2, 7)
    ]
    assert "1-my_chats" not in "".join(lines)  # the lead's file name, not our copy's


def test_only_leads_download_the_rejected_records(client, study, alice, bob, rejected_job):
    study.add_member(alice, Role.ANNOTATOR, Kind.STUDENT)
    url = reverse("job_download", args=[study.slug, rejected_job.pk])
    client.force_login(alice)
    response = client.get(url)
    assert response.status_code == 403 and "Leads only" in response.content.decode()
    client.force_login(bob)  # not a member: the study does not exist for him
    assert client.get(url).status_code == 404


def test_an_import_of_nothing_offers_its_rejected_records_too(client, study, lead, media):
    (media / "bad.jsonl").write_text("\n".join(BAD) + "\n")
    job = import_job(study, [{"path": "bad.jsonl", "name": "bad.jsonl"}])
    Job.objects.filter(pk=job.pk).update(params={**job.params, "format": "wildchat"})
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "Nothing could be imported" in job.error
    client.force_login(lead)
    response = client.get(reverse("job_download", args=[study.slug, job.pk]))
    assert len(b"".join(response.streaming_content).decode().splitlines()) == len(BAD)


def test_an_import_with_nothing_rejected_has_no_download(client, study, lead, upload):
    job = import_job(study, upload)
    run_import(job.pk)
    job.refresh_from_db()
    assert job.result_file == ""
    client.force_login(lead)
    assert client.get(reverse("job_download", args=[study.slug, job.pk])).status_code == 404


def test_the_intake_steps_leave_an_unfinished_import_alone(study, half_imported):
    """The coding filter's dry run over the study and the set a sample draws from see only
    what is done; a sample is refused while an import is unfinished, naming the job."""
    from annotation.intake.coding_filter import default_rules
    from annotation.intake.coding_report import dry_run_study
    from annotation.intake.sampling import SamplingRefused, draw_sample

    shown, hidden, running = half_imported
    assert dry_run_study(study, default_rules())["scanned"] == 1
    assert list(Conversation.objects.filter(study=study).in_set()) == [shown]
    with pytest.raises(SamplingRefused, match=f"an import that is not done \\(job {running.pk}\\)"):
        draw_sample(study, n=1, seed=1)
    assert not Conversation.objects.exclude(set_aside="").exists()
    running.finish({})
    draw_sample(study, n=1, seed=1)
    assert Conversation.objects.filter(set_aside="").count() == 1


@pytest.mark.parametrize("kind", [JobKind.FILTER, JobKind.LABEL_IMPORT])
def test_a_lost_filter_dry_run_or_label_import_is_failed_not_resumed(study, settings, kind):
    """The coding filter's dry run writes nothing and has no files, a label import commits
    its batches and is started again by hand: a lost one is marked failed, never queued
    again as a conversation import."""
    params = {"filter": "coding", "apply": False} if kind == JobKind.FILTER else {"files": []}
    job = Job.objects.create(study=study, kind=kind, params=params)
    job.start()
    stale = timezone.now() - timedelta(minutes=10)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert reap_lost_jobs(older_than=60) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "files" not in job.error
