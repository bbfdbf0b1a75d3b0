"""One import's numbers add up and agree wherever they are shown (issue 20, defect 5): every
record read is imported (or would be), rejected, dropped by the filter or already imported;
the coding filter judges exactly the records the import would otherwise take, so its
"matched" is the import's count and its "dropped" the summary's; the rejected-records
download holds exactly the records the summary counts as rejected (files not read and
warnings apart, under their own headings); and a dry run's counts are the real run's on the
same files and study, whatever the batch size."""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.db.options import WriterOptions
from annotation.importers import import_files
from annotation.importers import writer as writer_module
from annotation.intake.coding_filter import default_rules
from annotation.intake.coding_report import CodingFilter
from annotation.models import Conversation, Job, JobStatus
from annotation.tasks import run_import
from tests.factories import HTMX, PASSWORD, make_study

from .agent_files import SESSION, claude_code_session

pytestmark = pytest.mark.django_db


def native(cid: str, *texts: str, preamble: bool = False) -> str:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    if preamble:  # a warning: kept as the preamble
        messages.insert(0, {"role": "assistant", "content": "Welcome!"})
    return json.dumps({"id": cid, "messages": messages})


NO_USER = json.dumps({"id": "nouser", "messages": [{"role": "assistant", "content": "hi"}]})

# a file of every kind of record: coding and not, bad, duplicates of either, a warning
LINES = [
    native("a", "Write python code to sort a list", "sorted(xs)"),  # 1 coding
    native("b", "Write a poem about autumn", "Leaves fall"),  # 2 not coding
    "{broken",  # 3 invalid JSON
    NO_USER,  # 4 no user message
    native("a", "and in python 3?", "the same"),  # 5 duplicate id of a coding one
    native("b", "another poem", "roses"),  # 6 duplicate id of a dropped one
    native("c", "Java please", "class A {}", preamble=True),  # 7 coding, a warning
    native("d", "The weather is nice, let's go", "Have fun"),  # 8 not coding (a near miss)
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def counts(report) -> dict:
    return {
        key: getattr(report, key)
        for key in ("read", "conversations", "turns", "rejected", "dropped", "already_imported")
    }


def adds_up(report) -> bool:
    parts = report.conversations + report.rejected + report.dropped + report.already_imported
    return report.read == parts


def run(study, paths, *, dry_run: bool, coding: bool = True, fmt: str = "auto", options=None):
    keep = CodingFilter(default_rules()) if coding else None
    report = import_files(study, paths, fmt=fmt, keep=keep, dry_run=dry_run, writer_options=options)
    return report, (keep.result() if keep else None)


# -- the filter judges what the import would take ------------------------------------------------


def test_the_filter_judges_exactly_the_records_the_import_would_otherwise_take(study, tmp_path):
    # before: the filter judged the duplicates too ("3 of 6 match", 2 imported)
    path = write(tmp_path / "mix.jsonl", LINES)
    report, result = run(study, [path], dry_run=False)
    assert (result["matched"], result["dropped"]) == (report.conversations, report.dropped)
    assert result["scanned"] == report.conversations + report.dropped
    assert (report.conversations, report.dropped, report.rejected) == (2, 2, 4)
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["a", "c"]


def test_the_filter_does_not_judge_what_the_study_already_holds(study, tmp_path):
    # before: the already imported ones were judged, and counted as matches
    path = write(tmp_path / "mix.jsonl", LINES)
    run(study, [write(tmp_path / "head.jsonl", LINES[:2])], dry_run=False, coding=False)
    for dry_run in (True, False):
        report, result = run(study, [path], dry_run=dry_run)
        assert report.already_imported == 2  # lines 1 and 2, the very same records
        assert (result["scanned"], result["matched"]) == (2, 1)  # c and d; c matches
        assert (report.conversations, report.dropped) == (1, 1)
        assert adds_up(report)


def test_a_later_record_with_the_id_of_a_dropped_one_is_a_duplicate_in_any_batch(
    study, tmp_path, monkeypatch
):
    lines = [native("x", "a poem", "ok"), native("y", "python", "ok"), native("x", "python")]
    path = write(tmp_path / "f.jsonl", lines)
    seen = []
    for size, dry_run in itertools.product((1, 2, 100), (True, False)):
        monkeypatch.setattr(writer_module, "BATCH_SIZE", size)
        report, _ = run(make_study(f"s-{size}-{dry_run}"), [path], dry_run=dry_run)
        seen.append((counts(report), report.errors))
    assert all(s == seen[0] for s in seen), seen
    assert seen[0][1] == [f"{path}:3: duplicate id 'x' (first seen at {path}:1)"]


# -- every record read is counted once ------------------------------------------------------------


def test_every_record_read_is_imported_rejected_dropped_or_already_imported(study, tmp_path):
    path = write(tmp_path / "mix.jsonl", LINES)
    report, _ = run(study, [path], dry_run=True)
    assert counts(report) == {
        "read": 8,
        "conversations": 2,
        "turns": 2,
        "rejected": 4,
        "dropped": 2,
        "already_imported": 0,
    }
    assert "8 records read" in report.summary_line()


def test_a_bad_line_of_a_session_log_is_a_warning_not_a_rejected_record(study, tmp_path):
    # before: the session was imported and its bad line counted as a rejected record too
    lines = [json.dumps(x) for x in claude_code_session()]
    lines.insert(4, "{not json")
    path = write(tmp_path / f"{SESSION}.jsonl", lines)
    report = import_files(study, [path])
    assert (report.read, report.conversations, report.rejected, report.errors) == (1, 1, 0, [])
    assert report.warnings == [
        f"{path}:5: invalid JSON: Expecting property name enclosed in double quotes at column "
        "2; the line is left out"
    ]


def test_a_file_that_cannot_be_read_is_no_rejected_record(study, tmp_path):
    good = write(tmp_path / "mix.jsonl", LINES)
    bad = tmp_path / "notes.txt"
    bad.write_text("just some words\n")
    report, _ = run(study, [good, bad], dry_run=True)
    assert report.rejected == len(report.errors) == 4
    assert [line.split(": ")[0] for line in report.files_not_read] == [str(bad)]
    assert "1 file(s) could not be read" in report.summary_line()
    assert adds_up(report)


# -- dry run and real run -------------------------------------------------------------------------


def test_the_same_records_read_twice_in_one_import_count_alike_dry_and_real(study, tmp_path):
    # before: the dry run rejected the copy's records as duplicates, the real run skipped them
    # as already imported
    one = write(tmp_path / "mix.jsonl", LINES)
    two = write(tmp_path / "copy.jsonl", LINES)
    dry, dry_filter = run(study, [one, two], dry_run=True)
    real, real_filter = run(study, [one, two], dry_run=False)
    assert counts(dry) == counts(real)
    assert dry_filter == real_filter
    assert (real.conversations, real.already_imported) == (2, 2)
    assert Conversation.objects.count() == real.conversations
    assert adds_up(real)


def test_the_command_prints_the_same_counts_dry_and_real(study, tmp_path, capsys):
    one = write(tmp_path / "mix.jsonl", LINES)
    two = write(tmp_path / "copy.jsonl", LINES)
    args = ("import_conversations", study.slug, str(one), str(two), "--filter", "coding")
    call_command(*args, "--dry-run")
    dry = capsys.readouterr()
    call_command(*args)
    real = capsys.readouterr()
    assert real.out.replace("Imported", "Would import") == dry.out.replace(
        "Dry run: nothing was written.\n", ""
    )
    assert real.err == dry.err
    assert "Coding filter (rules " in real.out and ": 2 of 6 conversations match" in real.out
    assert (
        "Imported 2 conversations (2 turns) from 2 file(s); rejected 8 records; dropped 4 by "
        "the filter; already imported: 2; 16 records read; 2 warnings." in real.out
    )


def test_a_job_reading_the_same_records_twice_imports_them_once_and_says_so(study, tmp_path):
    # before: the real job counted the copy's records as its own imports (4 imported, 2 stored)
    one = write(tmp_path / "mix.jsonl", LINES)
    two = write(tmp_path / "copy.jsonl", LINES)
    results = []
    for dry_run in (True, False):
        job = Job.objects.create(study=study, kind="import", params={"dry_run": dry_run})
        keep = CodingFilter(default_rules())
        report = import_files(study, [one, two], keep=keep, dry_run=dry_run, job=job)
        results.append((counts(report), keep.result()))
    assert results[0] == results[1]
    assert results[1][0]["conversations"] == Conversation.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.parametrize("threaded", [False, True])
def test_the_dry_run_is_the_real_run_with_the_writer_thread_too(
    transactional_db, tmp_path, monkeypatch, threaded
):
    """PostgreSQL COPY, from the writer thread or not (it needs committed rows, so
    `transactional_db`): what a dry run counts is what the real run writes and counts."""
    options = WriterOptions.for_connection(thread=threaded)
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    study = make_study(f"pg-{threaded}".lower())
    one = write(tmp_path / "mix.jsonl", LINES)
    two = write(tmp_path / "copy.jsonl", LINES)
    head = write(tmp_path / "head.jsonl", LINES[:2])
    run(study, [head], dry_run=False, coding=False, options=options)
    dry, dry_filter = run(study, [one, two], dry_run=True, options=options)
    real, real_filter = run(study, [one, two], dry_run=False, options=options)
    assert (counts(dry), dry.errors, dry_filter) == (counts(real), real.errors, real_filter)
    assert adds_up(real) and real_filter["matched"] == real.conversations
    assert Conversation.objects.filter(study=study).count() == 2 + real.conversations


class Killed(BaseException):
    """What a SIGKILL looks like to the task: nothing after it runs, not even `except`."""


def test_a_resumed_job_counts_its_earlier_rows_once_and_a_second_copy_as_already_imported(
    study, media, monkeypatch
):
    # before: on the re-run, the copy's records matched the rows the job wrote and were
    # counted as its imports again (14 imported, 7 stored)
    records = [native(f"r{i}", f"question {i}", f"answer {i}") for i in range(7)]
    folder = media / "imports" / "up"
    folder.mkdir(parents=True)
    files = []
    for i, name in enumerate(("chats.jsonl", "copy.jsonl"), 1):
        write(folder / f"{i}-{name}", records)
        files.append({"path": f"imports/up/{i}-{name}", "name": name})
    job = Job.objects.create(study=study, kind="import", params={"format": "auto", "files": files})
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)

    def killed(self, *args, **kwargs):
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(Job, "set_progress", killed)
        with pytest.raises(Killed):
            run_import(job.pk)
    assert Conversation.objects.filter(import_job=job).count() == 2  # the first batch
    run_import(job.pk)  # the redelivered message resumes it
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert Conversation.objects.filter(study=study).count() == 7
    result = job.result
    assert (result["read"], result["conversations"], result["already_imported"]) == (14, 7, 7)


# -- the job page and its download ----------------------------------------------------------------


@pytest.fixture
def lead_client(client, lead, media, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    client.login(username="lead", password=PASSWORD)
    return client


def _page_import(client, study, dry_run: bool) -> Job:
    data = "".join(line + "\n" for line in LINES).encode()
    files = [
        SimpleUploadedFile("mix.jsonl", data),
        SimpleUploadedFile("copy.jsonl", data),
        SimpleUploadedFile("notes.txt", b"just some words\n"),
    ]
    post = {"format": "auto", "files": files, "filter": "coding"}
    if dry_run:
        post["dry_run"] = "1"
    client.post(reverse("lead_import", args=[study.slug]), post)
    return Job.objects.order_by("-pk").first()


def test_the_job_page_and_its_download_show_the_summarys_numbers(
    lead_client, study, django_capture_on_commit_callbacks
):
    # before: "6 of 12 match", "2 would be imported; 8 rejected", "Download all 9 rejected"
    jobs = []
    for dry_run in (True, False):
        with django_capture_on_commit_callbacks(execute=True):
            jobs.append(_page_import(lead_client, study, dry_run))
    for job in jobs:
        job.refresh_from_db()
    dry, real = jobs
    assert real.status == dry.status == JobStatus.DONE, real.error
    for key in ("read", "conversations", "turns", "rejected", "dropped", "already_imported"):
        assert dry.result[key] == real.result[key], key
    assert dry.result["filter"] == real.result["filter"]
    assert real.result["conversations"] == Conversation.objects.count() == 2
    for job in jobs:
        result = job.result
        body = lead_client.get(
            reverse("job_detail", args=[study.slug, job.pk]), **HTMX
        ).content.decode()
        body = re.sub(r"\s+", " ", body)
        assert "<strong>2</strong> of <strong>6</strong> conversations match" in body
        assert result["summary"] in body
        assert (result["conversations"], result["dropped"], result["rejected"]) == (2, 4, 8)
        assert "Download all 8 rejected records" in body
        download = lead_client.get(reverse("job_download", args=[study.slug, job.pk]))
        text = b"".join(download.streaming_content).decode()
        rejected, *apart = text.split("\n\n")
        assert len(rejected.splitlines()) == result["rejected"]
        assert all(re.match(r"(mix|copy)\.jsonl:\d+: ", line) for line in rejected.splitlines())
        headings = [section.splitlines()[0] for section in apart]
        assert headings == [
            "# Files not read (1): no record of them is counted above",
            "# Warnings (2): remarks on records read, each counted above",
        ]
        assert apart[0].splitlines()[1].startswith("notes.txt: ")


# -- the property: any mix of records ---------------------------------------------------------------

CODING = ["Fix this python script", "```rust\nfn main() {}\n```", "Java generics?"]
OTHER = ["A poem please", "let's go to the beach", "Plan a trip"]
TEXT = st.sampled_from(CODING + OTHER)
RECORD = st.one_of(
    st.builds(lambda i, u, r: native(f"n{i}", u, r), st.integers(0, 4), TEXT, TEXT),
    st.builds(lambda i, u: native(f"n{i}", u, "ok", preamble=True), st.integers(0, 4), TEXT),
    st.sampled_from(["{broken", NO_USER, '{"id": "x", "messages": 5}', '{"id": 7}']),
)
EXAMPLES = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(RECORD, max_size=10),
    earlier=st.integers(0, 10),
    copies=st.integers(1, 2),
    batch=st.sampled_from([1, 2, 3, 500]),
    coding=st.booleans(),
)
def test_any_mix_adds_up_and_the_dry_run_is_the_real_run(lines, earlier, copies, batch, coding):
    """A file of generated records (good, bad, duplicate ids, not about code), read once or
    twice, into a study that already holds its first `earlier` lines: the counts add up, the
    filter judges what would be imported, and the dry run says what the real run does."""
    n = next(EXAMPLES)
    study = make_study(f"prop-{n}")
    original = writer_module.BATCH_SIZE
    try:
        with tempfile.TemporaryDirectory() as tmp:
            head = write(Path(tmp) / "head.jsonl", lines[:earlier])
            import_files(study, [head], fmt="native")
            before = Conversation.objects.filter(study=study).count()
            paths = [write(Path(tmp) / f"f{i}.jsonl", lines) for i in range(copies)]
            writer_module.BATCH_SIZE = batch
            dry, dry_filter = run(study, paths, dry_run=True, coding=coding, fmt="native")
            assert Conversation.objects.filter(study=study).count() == before
            real, real_filter = run(study, paths, dry_run=False, coding=coding, fmt="native")
    finally:
        writer_module.BATCH_SIZE = original
    assert counts(dry) == counts(real)
    assert (dry.errors, dry.warnings) == (real.errors, real.warnings)
    assert dry_filter == real_filter
    assert real.read == copies * sum(1 for line in lines if line)
    assert adds_up(real)
    assert real.rejected == len(real.errors)
    assert Conversation.objects.filter(study=study).count() == before + real.conversations
    if coding:
        assert real_filter["matched"] == real.conversations
        assert real_filter["dropped"] == real.dropped
        assert real_filter["scanned"] == real.conversations + real.dropped
    else:
        assert real.dropped == 0
