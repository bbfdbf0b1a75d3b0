from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Study
from tests.factories import make_study


def test_it_creates_a_study_on_the_default_taxonomy(db, capsys):
    call_command("create_study", "smells-2025", "--name", "Smells 2025")
    study = Study.objects.get(slug="smells-2025")
    assert study.name == "Smells 2025"
    assert study.taxonomy_version.taxonomy.slug == "interaction-smells"
    assert "Created study smells-2025" in capsys.readouterr().out


def test_it_uses_the_slug_as_the_default_name(db):
    call_command("create_study", "pilot", "--taxonomy", "interaction-smells")
    assert Study.objects.get(slug="pilot").name == "pilot"


def test_it_refuses_an_existing_slug(db):
    make_study("pilot")
    with pytest.raises(CommandError, match="'pilot' already exists"):
        call_command("create_study", "pilot")
    assert Study.objects.count() == 1


def test_it_refuses_an_unknown_preset_naming_the_known_ones(db):
    with pytest.raises(CommandError, match="unknown taxonomy preset 'nope'.*interaction-smells"):
        call_command("create_study", "pilot", "--taxonomy", "nope")
    assert not Study.objects.exists()


def test_it_refuses_a_slug_that_is_not_a_slug(db):
    with pytest.raises(CommandError, match="not a valid slug"):
        call_command("create_study", "my study")
