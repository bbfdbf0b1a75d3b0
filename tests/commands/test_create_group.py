"""create_group SLUG NAME --kind expert|student [--moderator USERNAME] [--phase ...]."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Group, Kind, Membership, Phase, Role
from tests.factories import make_group

pytestmark = pytest.mark.django_db


def create(*args) -> str:
    out = StringIO()
    call_command("create_group", "s1", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_group_of_a_kind(client, study, lead):
    out = create("Experts A", "--kind", "expert")
    group = Group.objects.get(study=study, name="Experts A")
    assert group.kind == Kind.EXPERT
    assert group.moderator is None and group.phase == ""
    assert "Created group Experts A (expert) in study s1" in out
    client.force_login(lead)  # the lead's Groups page shows it
    assert "Experts A" in client.get(reverse("lead_groups", args=["s1"])).content.decode()


def test_it_seats_its_moderator(study, alice):
    out = create("S1", "--kind", "student", "--moderator", "alice")
    group = Group.objects.get(study=study, name="S1")
    assert group.moderator == alice
    membership = Membership.objects.get(study=study, user=alice)
    assert membership.role == Role.MODERATOR
    assert "moderator: alice" in out


def test_it_gives_the_group_its_own_phase(study):
    out = create("E1", "--kind", "expert", "--phase", "open_sort")
    group = Group.objects.get(study=study, name="E1")
    assert group.phase == Phase.OPEN_SORT and group.open_sorting
    assert "open sort" in out


def test_it_refuses_an_existing_name(study):
    make_group(study, "G1")
    with pytest.raises(CommandError, match="already has a group named 'G1'"):
        create("G1", "--kind", "student")
    assert study.groups.count() == 1


def test_it_refuses_an_unknown_moderator_and_creates_no_group(study):
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        create("G1", "--kind", "student", "--moderator", "ghost")
    assert not study.groups.exists()


def test_a_refused_moderator_seat_leaves_no_group(study, alice, monkeypatch):
    from annotation.models import SeatRefused

    def refuse(self, user, as_):
        raise SeatRefused(f"{user.username!r} cannot sit here")

    monkeypatch.setattr(Group, "seat", refuse)
    with pytest.raises(CommandError, match="'alice' cannot sit here"):
        create("G1", "--kind", "student", "--moderator", "alice")
    assert not study.groups.exists()


def test_it_refuses_a_blank_or_long_name(study):
    with pytest.raises(CommandError, match="a group needs a name"):
        create("  ", "--kind", "student")
    with pytest.raises(CommandError, match="at most 100 characters"):
        create("g" * 101, "--kind", "student")
    assert not study.groups.exists()


def test_it_needs_a_kind_and_knows_the_phases(study):
    with pytest.raises(CommandError, match="--kind"):
        create("G1")
    with pytest.raises(CommandError, match="invalid choice: 'sideways'"):
        create("G1", "--kind", "student", "--phase", "sideways")
    assert not study.groups.exists()


def test_it_refuses_an_unknown_study(db):
    with pytest.raises(CommandError, match="unknown study 's1'"):
        create("G1", "--kind", "student")


def test_it_sets_the_unit_its_annotators_label(study):
    out = create("E1", "--kind", "expert", "--unit", "episode")
    assert Group.objects.get(study=study, name="E1").unit == "episode"
    assert "labelling episodes" in out
    create("T1", "--kind", "student")
    assert Group.objects.get(study=study, name="T1").unit == "turn"
    with pytest.raises(CommandError):
        create("X1", "--kind", "student", "--unit", "session")
