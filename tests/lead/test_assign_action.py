"""The assignment as an operation of the domain (annotation/actions/assign.assign_as_asked):
both doors (the conversations page, `manage.py assign`) get a result or an AssignRefused
that says why, and a refusal assigns nothing."""

from __future__ import annotations

import pytest

from annotation.actions.assign import AssignRefused, assign_as_asked
from annotation.models import Assignment, Kind, Role
from tests.factories import make_conversation, make_group


def test_a_draw_by_the_lead_assigns_and_says_so(study, lead):
    for i in range(6):
        make_conversation(study, f"c{i}", n_turns=2)
    g1 = make_group(study, "G1")
    result = assign_as_asked(lead, study, [g1], "count", count=4, seed=3)
    assert result.done == 4 and result.seed == 3
    assert g1.conversations.count() == 4
    assert "Assigned 4 conversations (8 turns) to G1 at random with seed 3" in result.message


def test_someone_who_does_not_lead_the_study_assigns_nothing(study, alice):
    study.add_member(alice, Role.ANNOTATOR, Kind.STUDENT)
    c = make_conversation(study, "c0")
    g1 = make_group(study, "G1")
    with pytest.raises(AssignRefused, match="only the study's leads"):
        assign_as_asked(alice, study, [g1], "selection", conversations=[c.pk])
    assert not Assignment.objects.exists()


def test_an_unknown_way_is_refused_by_name(study, lead):
    g1 = make_group(study, "G1")
    with pytest.raises(AssignRefused, match="unknown way 'everything'"):
        assign_as_asked(lead, study, [g1], "everything")


def test_a_seat_conflict_is_a_refusal_and_nothing_is_assigned(study, lead, alice):
    a = make_group(study, "A", [alice])
    c = make_group(study, "C", [alice])
    free = make_conversation(study, "free")
    shared = make_conversation(study, "shared", group=a)
    # a calibration set of both to C: "free" would go, "shared" would seat alice twice
    with pytest.raises(AssignRefused, match="Nothing assigned: .*alice would sit in both"):
        assign_as_asked(lead, study, [c], "calibration", conversations=[free.pk, shared.pk])
    assert not c.conversations.exists()
