"""Kappa per team (AGREEMENT.md teams[kind]; issue 20, point 6): the mean of the groups'
kappas over the groups of one kind, each group's kappa checked against scikit-learn on the
same records, and the kinds never mixed in one mean."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.agreement.data import compute_study_report
from annotation.agreement.teams import NO_DEFINED, team_means
from annotation.models import Kind
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db

CODES = ["ambiguous_instruction", "must_do_omission", "code_rollback", "repetitive_response"]


def _labelled_study(seed: int):
    rng = random.Random(seed)
    study = make_study(f"teams{seed}")
    sets: dict[str, tuple[list, list]] = {}
    for g, kind in enumerate([Kind.EXPERT, Kind.EXPERT, Kind.STUDENT, Kind.STUDENT, Kind.STUDENT]):
        a, b = make_user(f"a{seed}-{g}"), make_user(f"b{seed}-{g}")
        group = make_group(study, f"g{g}", [a, b], kind=kind)
        turns = list(make_conversation(study, f"c{seed}-{g}", n_turns=12, group=group).turns.all())
        left, right = [], []
        for turn in turns:
            first = sorted(rng.sample(CODES, rng.randint(0, 2)))
            second = first if rng.random() < 0.6 else sorted(rng.sample(CODES, rng.randint(0, 2)))
            label(turn, a, *first)
            label(turn, b, *second)
            left.append("|".join(first))
            right.append("|".join(second))
        sets[group.name] = (left, right)
    return study, sets


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_team_means_are_the_means_of_sklearns_group_kappas(seed):
    study, sets = _labelled_study(seed)
    axis = compute_study_report(study, n_boot=0)["axes"]["smell"]
    sklearn = {name: cohen_kappa_score(*pair) for name, pair in sets.items()}
    for name, kappa in sklearn.items():
        assert axis["report"]["groups"][name]["cohen_kappa"] == pytest.approx(kappa, abs=1e-12)
    teams = axis["teams"]
    experts = [sklearn["g0"], sklearn["g1"]]
    students = [sklearn["g2"], sklearn["g3"], sklearn["g4"]]
    assert teams["expert"]["cohen_kappa_mean"] == pytest.approx(sum(experts) / 2, abs=1e-12)
    assert teams["student"]["cohen_kappa_mean"] == pytest.approx(sum(students) / 3, abs=1e-12)
    assert (teams["expert"]["n_groups"], teams["student"]["n_groups"]) == (2, 3)
    assert teams["student"]["groups"] == ["g2", "g3", "g4"]
    assert teams["student"]["lowest"] == pytest.approx(min(students))
    # the groups' percent agreement averaged the same way
    agreement = {
        name: sum(x == y for x, y in zip(*pair, strict=True)) / len(pair[0])
        for name, pair in sets.items()
    }
    assert teams["student"]["percent_agreement_mean"] == pytest.approx(
        sum(agreement[g] for g in ("g2", "g3", "g4")) / 3, abs=1e-12
    )
    # and per phase: every group follows the study's (closed sort)
    assert axis["phases"] == {
        "closed_sort": team_means(axis["report"]["groups"], dict.fromkeys(sets, "closed_sort"))[
            "closed_sort"
        ]
    }


def test_a_team_whose_groups_have_no_kappa_says_why():
    teams = team_means(
        {"e": {"cohen_kappa": None}, "s": {"cohen_kappa": 0.5}, "gone": {"cohen_kappa": 1.0}},
        {"e": "expert", "s": "student"},
    )
    assert teams["expert"]["cohen_kappa_mean"] is None
    assert teams["expert"]["n_defined"] == 0 and "cohen_kappa_mean_reason" in teams["expert"]
    assert teams["student"] == {
        "n_groups": 1,
        "n_defined": 1,
        "groups": ["s"],
        "cohen_kappa_mean": 0.5,
        "lowest": 0.5,
        "highest": 0.5,
        "percent_agreement_mean": None,
        "percent_agreement_mean_reason": NO_DEFINED,
        "per_label_kappa_macro_mean": None,
        "per_label_kappa_macro_mean_reason": NO_DEFINED,
        "per_label_kappa_micro_mean": None,
        "per_label_kappa_micro_mean_reason": NO_DEFINED,
    }
