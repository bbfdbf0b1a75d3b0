"""Kappa per team in the report (issue 20, point 6): after the group rows of "Cohen's kappa
per group", one row per team ("Expert groups: mean of 2 (lowest–highest)"), per phase where
the groups' phases differ, and an "All pairs" line that names the kinds it mixes, in every
output: the page, CSV, Markdown, LaTeX, the JSON download and the `agreement` command."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from django.core.management import call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.agreement.data import compute_study_report
from annotation.agreement.spec import fmt
from annotation.models import Kind, Phase
from tests.factories import label, make_conversation, make_group, make_user

from .helpers import done_job

pytestmark = pytest.mark.django_db

CODES = ["ambiguous_instruction", "must_do_omission", "code_rollback", "repetitive_response"]
MIXED = "All pairs (experts and students together)"


def _labelled(study, kinds, seed=0, phases=None):
    """One group of two annotators per entry of `kinds` (named g0, g1, ...), each on its own
    conversation of 12 cards labelled at random; {group name: sklearn's kappa}."""
    rng = random.Random(seed)
    kappas = {}
    for g, kind in enumerate(kinds):
        a, b = make_user(f"a{g}"), make_user(f"b{g}")
        group = make_group(study, f"g{g}", [a, b], kind=kind)
        if phases is not None:
            group.phase = phases[g]
            group.save(update_fields=["phase"])
        left, right = [], []
        for turn in make_conversation(study, f"c{g}", n_turns=12, group=group).turns.all():
            first = sorted(rng.sample(CODES, rng.randint(0, 2)))
            second = first if rng.random() < 0.6 else sorted(rng.sample(CODES, rng.randint(0, 2)))
            label(turn, a, *first)
            label(turn, b, *second)
            left.append("|".join(first))
            right.append("|".join(second))
        kappas[group.name] = cohen_kappa_score(left, right)
    return kappas


def _download(client, lead, study, fmt_):
    client.force_login(lead)
    return client.get(reverse("report_download", args=[study.slug, fmt_])).content.decode()


def _page_rows(client, lead, study) -> list[str]:
    """The row titles of the page's kappa-per-group table, in order."""
    client.force_login(lead)
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    table = html[html.index('class="numbers kappa-groups"') :]
    table = table[: table.index("</table>")]
    return [row.split("</th>")[0] for row in table.split('<th scope="row">')[1:]]


def _range(values) -> str:
    return f"({fmt(min(values))}–{fmt(max(values))})"


@pytest.mark.slow
def test_each_team_has_a_row_after_the_groups_in_every_output(client, study, lead):
    kappas = _labelled(study, [Kind.EXPERT, Kind.EXPERT, Kind.STUDENT, Kind.STUDENT, Kind.STUDENT])
    experts = [kappas["g0"], kappas["g1"]]
    students = [kappas["g2"], kappas["g3"], kappas["g4"]]
    done_job(study, compute_study_report(study, n_boot=20))
    expert_row = f"Expert groups: mean of 2 {_range(experts)}"
    student_row = f"Student groups: mean of 3 {_range(students)}"

    assert _page_rows(client, lead, study) == [
        "g0", "g1", "g2", "g3", "g4", expert_row, student_row, MIXED,
    ]  # fmt: skip

    md = _download(client, lead, study, "md").splitlines()
    expert_md = next(line for line in md if line.startswith(f"| {expert_row} |"))
    # the team's pairs, then the mean of its groups' kappas
    assert expert_md.startswith(f"| {expert_row} | 2 | {fmt(sum(experts) / 2)} |")
    student_md = next(line for line in md if line.startswith(f"| {student_row} |"))
    assert student_md.startswith(f"| {student_row} | 3 | {fmt(sum(students) / 3)} |")
    assert any(line.startswith(f"| {MIXED} | 5 |") for line in md)
    assert not any(line.startswith("| All pairs |") for line in md)

    tex = _download(client, lead, study, "tex")
    tex_range = _range(experts).replace("–", "--")
    assert f"Expert groups: mean of 2 {tex_range} & 2 & {fmt(sum(experts) / 2)} &" in tex

    rows = list(csv.DictReader(io.StringIO(_download(client, lead, study, "csv"))))
    by = {(r["scope"], r["name"], r["statistic"]): r for r in rows if r["label"] == ""}
    assert float(by[("team", "expert", "cohen_kappa")]["value"]) == pytest.approx(
        sum(experts) / 2, abs=1e-12
    )
    assert float(by[("team", "student", "lowest")]["value"]) == pytest.approx(min(students))
    assert float(by[("team", "student", "highest")]["value"]) == pytest.approx(max(students))
    assert by[("team", "student", "n_groups")]["value"] == "3"
    assert by[("team", "student", "n_defined")]["value"] == "3"

    result = json.loads(_download(client, lead, study, "json"))
    teams = result["axes"]["smell"]["teams"]
    assert teams["expert"]["cohen_kappa_mean"] == pytest.approx(sum(experts) / 2, abs=1e-12)

    out = io.StringIO()
    call_command("agreement", study.slug, "--bootstrap", "0", stdout=out)
    text = out.getvalue()
    assert f"{expert_row}: kappa {fmt(sum(experts) / 2)}" in text
    assert f"{student_row}: kappa {fmt(sum(students) / 3)}" in text
    assert f"{MIXED}: kappa" in text


def test_one_kind_keeps_the_all_pairs_line_and_one_group_needs_no_team_row(client, study, lead):
    kappas = _labelled(study, [Kind.STUDENT, Kind.STUDENT])
    done_job(study, compute_study_report(study, n_boot=0))
    assert _page_rows(client, lead, study) == [
        "g0", "g1", f"Student groups: mean of 2 {_range(kappas.values())}", "All pairs",
    ]  # fmt: skip


def test_a_single_group_has_no_team_row(client, study, lead):
    _labelled(study, [Kind.STUDENT])
    done_job(study, compute_study_report(study, n_boot=0))
    assert _page_rows(client, lead, study) == ["g0", "All pairs"]


def test_teams_in_their_own_phase_name_it(client, study, lead):
    kinds = [Kind.EXPERT, Kind.EXPERT, Kind.STUDENT, Kind.STUDENT]
    phases = [Phase.OPEN_SORT, Phase.OPEN_SORT, "", ""]  # "": the study's (closed sort)
    kappas = _labelled(study, kinds, seed=3, phases=phases)
    result = compute_study_report(study, n_boot=0)
    done_job(study, result)
    experts, students = [kappas["g0"], kappas["g1"]], [kappas["g2"], kappas["g3"]]
    assert _page_rows(client, lead, study)[4:] == [
        f"Expert groups (open sort): mean of 2 {_range(experts)}",
        f"Student groups (closed sort): mean of 2 {_range(students)}",
        MIXED,
    ]
    phases_of = result["axes"]["smell"]["phases"]
    assert phases_of["open_sort"]["groups"] == ["g0", "g1"]
    assert phases_of["closed_sort"]["cohen_kappa_mean"] == pytest.approx(sum(students) / 2)


def test_phases_across_teams_get_rows_of_their_own(client, study, lead):
    kinds = [Kind.STUDENT, Kind.STUDENT, Kind.STUDENT]
    phases = [Phase.OPEN_SORT, "", Phase.CLOSED_SORT]
    kappas = _labelled(study, kinds, seed=4, phases=phases)
    done_job(study, compute_study_report(study, n_boot=0))
    closed = [kappas["g1"], kappas["g2"]]
    assert _page_rows(client, lead, study)[3:] == [
        f"Student groups: mean of 3 {_range(kappas.values())}",
        f"Closed-sort groups: mean of 2 {_range(closed)}",
        f"Open-sort groups: mean of 1 {_range([kappas['g0']])}",
        "All pairs",
    ]
    rows = list(csv.DictReader(io.StringIO(_download(client, lead, study, "csv"))))
    by = {(r["scope"], r["name"], r["statistic"]): r["value"] for r in rows if not r["label"]}
    assert float(by[("phase", "closed_sort", "cohen_kappa")]) == pytest.approx(sum(closed) / 2)


def test_a_team_without_a_defined_kappa_says_so(client, study, lead):
    _labelled(study, [Kind.EXPERT, Kind.STUDENT])
    # the expert pair agrees on one constant set: its kappa is undefined
    for turn in study.conversations.get(external_id="c0").turns.all():
        for annotation in turn.annotations.filter(is_current=True):
            annotation.types.clear()
    result = compute_study_report(study, n_boot=0)
    assert result["axes"]["smell"]["teams"]["expert"]["cohen_kappa_mean"] is None
    done_job(study, result)
    rows = _page_rows(client, lead, study)
    assert "Expert groups: mean of 0 of 1" in rows
    assert rows[-1] == MIXED
