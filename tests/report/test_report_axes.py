"""The agreement report of a taxonomy of several axes (agent-misalignment): one report per
axis, each axis's labels only; a pick-one axis's Cohen's kappa is the single-label kappa
(scikit-learn on the one code per card, none a category of its own), a multi-select axis's
per-label kappas are those of each type's present/absent vectors (AGREEMENT.md); the report
page has one section per axis."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from annotation.agreement.data import compute_study_report
from annotation.models import Job, JobKind, JobStatus, Kind, Role
from tests.factories import label, make_conversation, make_group, make_study, make_user
from tests.report.helpers import named

pytestmark = pytest.mark.django_db

# per card: (alice's codes, bob's codes), written in version 1's codes and given in version
# 2's (the preset's mapping: outcome and resolution recast into four pick-one axes)
RECAST = {
    "effort_or_trust_cost": {"DS1"},
    "code_or_task_damage": {"DS2", "code_or_task"},
    "project_state_damage": {"DS3", "project"},
    "developer_pushback": {"visible", "RV2"},
    "self_corrected": {"visible", "RV1"},
    "unknown": {"status_unknown"},
}
V1_CARDS = [
    (
        {"scope_overreach", "code_or_task_damage", "developer_pushback"},
        {"scope_overreach", "code_or_task_damage", "self_corrected"},
    ),
    (
        {"faulty_implementation", "effort_or_trust_cost", "unknown"},
        {"faulty_implementation", "effort_or_trust_cost", "unknown"},
    ),
    (
        {"misread_project", "instruction_following_failure", "project_state_damage"},
        {"misread_project", "scope_overreach", "project_state_damage", "developer_pushback"},
    ),
    (set(), set()),
    (
        {
            "inaccurate_self_reporting",
            "underspecified_instruction",
            "effort_or_trust_cost",
            "developer_pushback",
        },
        {
            "inaccurate_self_reporting",
            "underspecified_instruction",
            "code_or_task_damage",
            "developer_pushback",
        },
    ),
    (
        {"scope_overreach", "effort_or_trust_cost", "self_corrected"},
        {"faulty_implementation", "effort_or_trust_cost", "self_corrected"},
    ),
]


def recast(codes: set[str]) -> set[str]:
    return set().union(*(RECAST.get(c, {c}) for c in codes)) if codes else set()


CARDS = [(recast(a), recast(b)) for a, b in V1_CARDS]
SINGLE_AXES = {
    "damage_severity": ["DS1", "DS2", "DS3"],
    "damage_locus": ["code_or_task", "project", "external"],
    "resolution_status": ["visible", "status_unknown"],
    "resolver": ["RV1", "RV2", "RV3"],
}


@pytest.fixture
def agents(alice, bob):
    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    turns = make_conversation(study, "session-1", n_turns=len(CARDS), group=group).turns.order_by(
        "index"
    )
    for turn, (a, b) in zip(turns, CARDS, strict=True):
        label(turn, alice, *sorted(a))
        label(turn, bob, *sorted(b))
    return study


def single(codes: set[str], axis: list[str]) -> str:
    (picked,) = (codes & set(axis)) or {"(none)"}
    return picked


@pytest.mark.parametrize("axis, types", list(SINGLE_AXES.items()))
def test_a_pick_one_axis_has_the_single_label_kappa(agents, axis, types):
    result = compute_study_report(agents, n_boot=0)
    pair = named(result["axes"][axis]["report"]["pairs"])["alice|bob"]
    a = [single(x, types) for x, _ in CARDS]
    b = [single(y, types) for _, y in CARDS]
    assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    assert pair["n_common_cards"] == len(CARDS)


def test_a_multi_select_axis_has_its_per_label_kappas(agents):
    result = compute_study_report(agents, n_boot=0)
    per_label = named(result["axes"]["symptom"]["report"]["pairs"])["alice|bob"]["per_label_kappa"]
    for code in ("scope_overreach", "faulty_implementation"):
        a = [int(code in x) for x, _ in CARDS]
        b = [int(code in y) for _, y in CARDS]
        assert per_label[code] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    # only the axis's own types
    assert set(per_label) <= {
        "misread_project",
        "misread_developer_intent",
        "developer_constraint_violation",
        "scope_overreach",
        "faulty_implementation",
        "operational_execution_error",
        "inaccurate_self_reporting",
    }


def test_the_report_page_has_one_section_per_axis(client, agents):
    lead = make_user("lead")
    agents.add_member(lead, Role.LEAD, Kind.EXPERT)
    result = compute_study_report(agents, n_boot=0)
    Job.objects.create(
        study=agents,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=result,
        finished_at=timezone.now(),
    )
    client.force_login(lead)
    html = client.get(reverse("report", args=[agents.slug])).content.decode()
    sections = re.findall(
        r'<section class="panel axis" id="axis-(\w+)">\s*<h2[^>]*>([^<]+)</h2>', html
    )
    assert sections == [
        ("symptom", "Axis: Symptom"),
        ("cause", "Axis: Cause"),
        ("damage_severity", "Axis: Damage severity"),
        ("damage_locus", "Axis: Damage locus"),
        ("resolution_status", "Axis: Resolution status"),
        ("resolver", "Axis: Resolver"),
    ]
