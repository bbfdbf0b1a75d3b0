"""The methods section's machine judges step (issue 22 point 5): each run described (name,
version, model, prompt digest, parameters, threshold) with its scores and intervals from
the agreement job, the annotators beside it, the runs against each other; for the leads
(and the command line) only: a moderator's Methods tab and downloads name no judge."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.methods import methods_of
from annotation.methods.render import to_latex, to_markdown
from annotation.models import Job, JobKind, JobStatus

from .scores_world import judged_study

pytestmark = pytest.mark.django_db

PSEUDO = ("det-code-rollback@1", "llm-gpt-x@3fa2c1")


@pytest.fixture
def world(study, lead):
    world = judged_study(study)
    result = compute_study_report(study, n_boot=40, seed=2)
    world["result"] = result
    world["job"] = Job.objects.create(
        study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, result=result
    )
    return world


def _step(section: dict, name: str) -> dict | None:
    return next((s for s in section["steps"] if s["step"] == name), None)


def test_the_lead_reads_each_judge_and_its_scores(study, lead, world):
    step = _step(methods_of(study, user=lead), "judges")
    text = step["text"]
    assert "The judge llm-annotate, version 3fa2c1" in text
    assert "model gpt-x" in text and "prompt SHA-256 3fa2c1000000" in text
    assert "parameters seed 1 and temperature 0.0" in text
    assert "40 bootstrap resamples of the conversations (seed 2)" in text
    run = world["result"]["judges"]["axes"]["smell"]["runs"][str(world["detector"].pk)]
    gold = run["gold"]
    ci = gold["micro_f1_ci"]
    assert f"micro F1 {gold['micro_f1']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" in text
    assert "the annotators' micro F1 on the same cards: alice" in text
    assert "Thresholds chosen on" in text
    assert "agreed on 6 common cards" in text  # the two runs
    name = f"code-rollback@1 (run {world['detector'].pk})"
    row = next(r for r in step["rows"] if r[1] == name and r[2] == "the study gold")
    assert row[3:] == [gold["n_cards"], gold["accuracy"], gold["accuracy_ci"],
                       gold["cohen_kappa"], gold["cohen_kappa_ci"], gold["micro_f1"], ci]  # fmt: skip
    assert any(r[1] == "alice (annotator)" for r in step["rows"])
    assert "Machine judges" in to_markdown(methods_of(study, user=lead))
    assert "Machine judges" in to_latex(methods_of(study))  # the command line: everything


def test_a_moderator_reads_no_judge(client, study, world):
    section = methods_of(study, user=world["moderator"])
    assert _step(section, "judges") is None
    dumped = json.dumps(section)
    for name in PSEUDO:
        assert name not in dumped
    client.force_login(world["moderator"])
    body = client.get(reverse("report_methods", args=[study.slug])).content.decode()
    assert "Machine judges" not in body
    for fmt in ("md", "tex", "json"):
        response = client.get(reverse("methods_download", args=[study.slug, fmt]))
        for name in (*PSEUDO, "llm-annotate", "code-rollback"):
            assert name not in response.content.decode()


def test_a_study_without_judge_runs_has_no_judges_step(study, lead):
    from tests.report.helpers import labelled_study

    labelled_study(study)
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=compute_study_report(study, n_boot=0),
    )
    assert _step(methods_of(study, user=lead), "judges") is None
