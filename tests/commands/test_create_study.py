from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Kind, Membership, Phase, Role, Study
from taxonomy.models import Taxonomy
from tests.factories import make_study, make_user


def test_it_creates_a_study_on_the_default_taxonomy(db, capsys):
    make_user("lead")
    call_command("create_study", "smells-2025", "--name", "Smells 2025", "--lead", "lead")
    study = Study.objects.get(slug="smells-2025")
    assert study.name == "Smells 2025"
    assert study.taxonomy_version.taxonomy.slug == "interaction-smells"
    assert "Created study smells-2025" in capsys.readouterr().out


def test_it_uses_the_slug_as_the_default_name(db):
    call_command("create_study", "pilot", "--taxonomy", "interaction-smells", "--no-lead")
    assert Study.objects.get(slug="pilot").name == "pilot"


def test_it_seats_the_lead_who_then_opens_the_study(client, db, capsys):
    lead = make_user("lead")
    call_command("create_study", "pilot", "--lead", "lead", "--phase", "open_sort")
    study = Study.objects.get(slug="pilot")
    membership = Membership.objects.get(study=study, user=lead)
    assert (membership.role, membership.kind) == (Role.LEAD, Kind.EXPERT)
    assert study.phase == Phase.OPEN_SORT
    assert "lead: lead" in capsys.readouterr().out
    # before issue 20 the study had no lead and was a 404 for everyone
    client.force_login(lead)
    assert client.get(reverse("study", args=["pilot"])).status_code == 200
    assert client.get(reverse("lead_conversations", args=["pilot"])).status_code == 200


def test_it_needs_a_lead_or_no_lead_said_so(db):
    with pytest.raises(CommandError, match="--lead USERNAME.*--no-lead"):
        call_command("create_study", "pilot")
    assert not Study.objects.exists()


def test_it_refuses_a_lead_and_no_lead_together(db):
    make_user("lead")
    with pytest.raises(CommandError, match="not allowed with"):
        call_command("create_study", "pilot", "--lead", "lead", "--no-lead")
    assert not Study.objects.exists()


def test_it_refuses_an_unknown_lead_naming_them_and_creates_nothing(db):
    with pytest.raises(CommandError, match="no user named 'ghost'.*--create-user"):
        call_command("create_study", "pilot", "--lead", "ghost")
    assert not Study.objects.exists()
    assert not get_user_model().objects.filter(username="ghost").exists()


def test_it_creates_the_lead_without_a_usable_password(db, capsys):
    call_command("create_study", "pilot", "--lead", "newlead", "--create-user")
    user = get_user_model().objects.get(username="newlead")
    assert not user.has_usable_password()
    assert Study.objects.get(slug="pilot").role_of(user) == Role.LEAD
    assert "created user newlead" in capsys.readouterr().out


def test_create_user_reuses_an_existing_user(db):
    lead = make_user("lead")
    call_command("create_study", "pilot", "--lead", "lead", "--create-user")
    lead.refresh_from_db()
    assert lead.has_usable_password()  # their password is left alone
    assert get_user_model().objects.filter(username="lead").count() == 1


def test_it_refuses_a_username_that_cannot_be_one(db):
    with pytest.raises(CommandError, match="'bad name!' cannot be a username"):
        call_command("create_study", "pilot", "--lead", "bad name!", "--create-user")
    assert not Study.objects.exists()
    assert not get_user_model().objects.exists()


def test_it_leaves_nothing_half_created_when_the_lead_cannot_be_seated(db, monkeypatch):
    # a failure after the study row and the new user are written rolls back both
    def refuse(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Study, "add_member", refuse)
    with pytest.raises(RuntimeError):
        call_command("create_study", "pilot", "--lead", "newlead", "--create-user")
    assert not Study.objects.exists()
    assert not get_user_model().objects.filter(username="newlead").exists()


def test_it_refuses_an_existing_slug(db):
    make_study("pilot")
    make_user("lead")
    with pytest.raises(CommandError, match="'pilot' already exists"):
        call_command("create_study", "pilot", "--lead", "lead")
    assert Study.objects.count() == 1


def test_it_refuses_an_unknown_preset_naming_the_known_ones(db):
    make_user("lead")
    with pytest.raises(CommandError, match="unknown taxonomy preset 'nope'.*interaction-smells"):
        call_command("create_study", "pilot", "--taxonomy", "nope", "--lead", "lead")
    assert not Study.objects.exists()


def test_it_refuses_a_preset_name_that_is_a_path(db):
    with pytest.raises(CommandError, match="unknown taxonomy preset"):
        call_command("create_study", "pilot", "--taxonomy", "../presets/split-check", "--no-lead")
    assert not Study.objects.exists()
    assert not Taxonomy.objects.exists()


def test_it_refuses_a_slug_that_is_not_a_slug(db):
    with pytest.raises(CommandError, match="not a valid slug"):
        call_command("create_study", "my study", "--no-lead")


def test_it_refuses_a_slug_or_name_too_long(db):
    with pytest.raises(CommandError, match="slug.*at most 50"):
        call_command("create_study", "s" * 51, "--no-lead")
    with pytest.raises(CommandError, match="name.*at most 200"):
        call_command("create_study", "pilot", "--name", "n" * 201, "--no-lead")
    assert not Study.objects.exists()
