"""`agreement SLUG --dev-share S --seed N` (issue 22 point 5): the judges' section with the
development split asked for, in the JSON and the summary; a share outside (0, 1) refused by
name; the agreement job passes its `dev_share` param on."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Job, JobKind, JobStatus
from annotation.tasks import run_agreement

from .scores_world import judged_study

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command("agreement", "s1", "--bootstrap", "20", *args, stdout=out)
    return out.getvalue()


def test_the_command_splits_as_asked(study):
    world = judged_study(study)
    result = json.loads(_run("--json", "--dev-share", "0.5", "--seed", "4"))
    split = result["judges"]["axes"]["smell"]["runs"][str(world["detector"].pk)]["dev_test"]
    assert (split["dev_share"], split["seed"]) == (0.5, 4)
    text = _run("--dev-share", "0.5")
    assert "Machine judges against the gold, the annotators beside them:" in text
    assert f"code-rollback@1 (run {world['detector'].pk}) against the study gold" in text


@pytest.mark.parametrize("share", ["0", "1", "1.5"])
def test_a_share_outside_zero_and_one_is_refused(study, share):
    judged_study(study)
    with pytest.raises(CommandError, match="--dev-share"):
        _run("--dev-share", share)


def test_the_agreement_job_passes_its_dev_share_on(study, lead):
    world = judged_study(study)
    job = Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        created_by=lead,
        params={"round": 1, "seed": 1, "n_boot": 10, "dev_share": 0.5},
    )
    run_agreement.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    split = job.result["judges"]["axes"]["smell"]["runs"][str(world["detector"].pk)]["dev_test"]
    assert split["dev_share"] == 0.5
