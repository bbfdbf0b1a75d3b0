"""The methods section of a study that did little, or did it another way: a new study says
what was not done, an import of the page and conversations written outside any job are both
listed, and an agreement result computed before the per-team means existed still gets them,
one kind at a time."""

from __future__ import annotations

from annotation.agreement.data import compute_study_report
from annotation.methods import methods_of
from annotation.models import Conversation, Job, JobKind, JobStatus, Kind
from tests.factories import label, make_conversation, make_group, make_user


def steps(study) -> dict:
    return {s["step"]: s for s in methods_of(study)["steps"]}


def test_a_new_study_says_what_was_not_done(study):
    got = steps(study)

    assert got["import"]["text"] == "No conversation was imported."
    assert got["filter"]["text"] == "No coding filter was run before the splitting."
    assert got["splitting"]["text"] == "The conversations were not split."
    assert got["split-check"]["text"].startswith("The splitting was not checked")
    assert got["sample"]["text"].startswith("No sample was drawn")
    assert got["teams"]["text"] == "No group was set up."
    assert got["agreement"]["text"].startswith("No agreement was computed yet")
    assert all(s["rows"] == [] for k, s in got.items() if k not in ("moderation",))


def test_a_page_import_and_conversations_of_no_job_are_both_listed(study):
    job = Job.objects.create(
        study=study, kind=JobKind.IMPORT, status=JobStatus.DONE,
        params={"format": "auto", "files": [{"path": "imports/1/1-w.jsonl", "name": "w.jsonl"}]},
        result={"conversations": 2, "turns": 5, "rejected": 3, "dropped": 0, "already_imported": 1},
    )  # fmt: skip
    for cid in ("w1", "w2"):
        c = make_conversation(study, cid, n_turns=2)
        Conversation.objects.filter(pk=c.pk).update(import_job=job, source_file="w.jsonl")
    make_conversation(study, "demo1", n_turns=3)
    running = Job.objects.create(study=study, kind=JobKind.IMPORT, params={"files": []})
    half = make_conversation(study, "half", n_turns=1)
    Conversation.objects.filter(pk=half.pk).update(import_job=running)

    step = steps(study)["import"]

    (page,) = step["data"]["imports"]
    assert (page["files"], page["records"], page["rejected"], page["in_study"]) == (
        ["w.jsonl"], 6, 3, 2,
    )  # fmt: skip
    assert step["data"]["outside_jobs"] == [
        {"format": "native", "file": "", "in_study": 1, "turns": 3}
    ]
    assert step["data"]["totals"]["conversations"] == 3  # never the running import's
    assert "not recorded" in step["text"]


def test_an_older_agreement_result_gets_its_team_means_one_kind_at_a_time(study):
    people = [make_user(n) for n in ("e1", "e2", "s1", "s2")]
    experts = make_group(study, "E", people[:2], kind=Kind.EXPERT)
    students = make_group(study, "S", people[2:], kind=Kind.STUDENT)
    for group, (a, b) in ((experts, people[:2]), (students, people[2:])):
        turns = list(make_conversation(study, group.name, n_turns=4, group=group).turns.all())
        for k, turn in enumerate(turns):
            label(turn, a, "code_rollback" if k % 2 else "must_do_omission")
            label(turn, b, "code_rollback" if k in (1, 2) else "must_do_omission")
    result = compute_study_report(study, n_boot=0)
    del result["axes"]["smell"]["teams"]  # as computed before teams existed
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE,
                       result=result)  # fmt: skip

    axis = steps(study)["agreement"]["data"]["axes"]["smell"]

    groups = result["axes"]["smell"]["report"]["groups"]
    assert axis["teams"]["expert"]["cohen_kappa_mean"] == groups["E"]["cohen_kappa"]
    assert axis["teams"]["student"]["cohen_kappa_mean"] == groups["S"]["cohen_kappa"]
    assert axis["teams"]["expert"]["groups"] == ["E"]


def test_the_split_check_studies_are_found_by_their_own_index():
    """check_studies looks a study's split checks up by their conversations' source (format
    SOURCE_FORMAT): the partial index that answers it names the same format (issue 25: a scan
    of every conversation otherwise, 41 ms at 1,000,000)."""
    from annotation.intake.splitcheck.common import SOURCE_FORMAT
    from annotation.models import Conversation

    (index,) = [i for i in Conversation._meta.indexes if i.name == "conv_split_check_source"]
    assert index.condition.children == [("source_format", SOURCE_FORMAT)]
    assert index.fields == ["source_file"]
