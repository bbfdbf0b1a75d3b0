"""What the methods section reads must be recorded by the commands too: an import run with
`import_conversations` is kept as a finished import job (files, format, counts, the filter's
report) owning the conversations it wrote, and `agreement --save` keeps its result as the
study's agreement job (the report page and `methods` read the latest one)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import Conversation, Job, JobKind, JobStatus
from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db


def native(cid: str, *texts: str) -> str:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    return json.dumps({"id": cid, "messages": messages})


def test_it_keeps_a_command_import_as_a_finished_job_owning_its_conversations(study, tmp_path):
    earlier = make_conversation(study, "before", n_turns=1)
    path = tmp_path / "a.jsonl"
    lines = [
        native("c1", "Fix my Python loop", "done"),
        "{oops",
        native("c2", "let's go to the beach", "sure"),
        native("c3", "a SQL join please", "SELECT 1", "and in Java?", "class A {}"),
    ]
    path.write_text("\n".join(lines) + "\n")

    call_command(
        "import_conversations", study.slug, str(path), "--filter", "coding", stdout=StringIO(),
        stderr=StringIO(),
    )  # fmt: skip

    job = Job.objects.get(study=study, kind=JobKind.IMPORT)
    assert job.status == JobStatus.DONE and job.finished_at is not None
    assert job.params["files"] == [{"name": str(path)}]
    assert (job.params["format"], job.params["filter"], job.params["via"]) == (
        "auto",
        "coding",
        "command",
    )
    result = job.result
    assert (result["conversations"], result["turns"], result["rejected"]) == (2, 3, 1)
    assert result["dropped"] == 1
    assert (result["filter"]["scanned"], result["filter"]["matched"]) == (3, 2)
    assert set(
        Conversation.objects.filter(import_job=job).values_list("external_id", flat=True)
    ) == {
        "c1",
        "c3",
    }
    earlier.refresh_from_db()
    assert earlier.import_job is None


def test_a_dry_run_keeps_no_job(study, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(native("c1", "Fix my Python loop", "done") + "\n")

    call_command("import_conversations", study.slug, str(path), "--dry-run", stdout=StringIO())

    assert not Job.objects.exists()


def test_agreement_save_keeps_the_result_as_the_studys_agreement_job(study, alice, bob):
    group = make_group(study, "A", [alice, bob])
    turns = list(make_conversation(study, "c", n_turns=2, group=group).turns.all())
    for turn in turns:
        label(turn, alice, "code_rollback")
        label(turn, bob, "code_rollback")
    out = StringIO()

    call_command("agreement", study.slug, "--save", "--bootstrap", "0", stdout=out)

    job = Job.objects.get(study=study, kind=JobKind.AGREEMENT)
    assert job.status == JobStatus.DONE and job.finished_at is not None
    assert job.params == {"round": 1, "seed": 0, "n_boot": 0, "dev_share": 0.3, "via": "command"}
    assert job.result["axes"]["smell"]["report"]["n_cards"] == 2
    assert f"job {job.pk}" in out.getvalue()
