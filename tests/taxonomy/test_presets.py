from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.urls import reverse
from django.utils.html import escape

from annotation.actions.studies import preset_names
from taxonomy.models import Taxonomy, Type, preset_data
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db


def test_it_loads_the_nine_interaction_smells_in_three_categories():
    version = Taxonomy.load_preset("interaction-smells")
    types = list(Type.objects.filter(axis__version=version).select_related("category"))
    assert [t.hotkey for t in types] == [str(i) for i in range(1, 10)]
    assert types[0].code == "ambiguous_instruction"
    assert types[-1].code == "repetitive_response"
    assert {t.category.name for t in types} == {
        "User Intent Quality",
        "Historical Instruction Compliance",
        "Historical Response Violation",
    }
    assert all(t.definition for t in types)
    assert version.axes.get().multi_select


def test_it_loads_a_preset_once():
    first = Taxonomy.load_preset("interaction-smells")
    assert Taxonomy.load_preset("interaction-smells") == first
    assert Taxonomy.objects.count() == 1


def test_it_names_the_known_presets_for_an_unknown_one():
    with pytest.raises(ValueError, match="agent-misalignment, interaction-smells"):
        Taxonomy.load_preset("nope")


def test_the_agent_misalignment_preset_has_the_studys_six_axes():
    version = Taxonomy.load_preset("agent-misalignment")
    axes = {a.code: a for a in version.axes.all()}
    assert list(axes) == [
        "symptom",
        "cause",
        "damage_severity",
        "damage_locus",
        "resolution_status",
        "resolver",
    ]
    assert axes["cause"].max_labels == 2
    assert not any(axes[a].multi_select for a in list(axes)[2:])
    # its version 1 (outcome, resolution) stays, the parent studies move from
    assert [a.code for a in version.parent.axes.all()] == [
        "symptom",
        "cause",
        "outcome",
        "resolution",
    ]


def test_a_version_used_by_a_study_is_frozen():
    study = make_study()
    study.taxonomy_version.refresh_from_db()
    assert study.taxonomy_version.frozen


PRESETS = ["interaction-smells", "agent-misalignment", "split-check", "split-check-entries"]
MIGRATION = importlib.import_module("taxonomy.migrations.0006_preset_examples")


@pytest.mark.parametrize("slug", PRESETS)
def test_every_type_of_every_preset_has_an_example(slug):
    assert sorted(PRESETS) == preset_names()  # a new preset joins this list
    version = Taxonomy.load_preset(slug)
    types = version.type_list()
    assert types
    assert [t.code for t in types if not t.example.strip()] == []


@pytest.mark.parametrize("slug", PRESETS)
def test_the_guideline_shows_each_types_example(client, slug):
    study = make_study(slug="g", taxonomy=slug)
    alice = make_user("alice")
    group = make_group(study, "g", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    page = client.get(reverse("card", args=[study.slug, turn.pk])).content.decode()
    guide = page.split('<aside id="guide"')[1].split("</aside>")[0]
    for t in study.taxonomy_version.type_list():
        shown = f'<dt data-type="{t.code}">'
        assert shown in guide, t.code
        entry = guide.split(shown)[1].split("</dd>")[0]
        assert f"<strong>Example:</strong> {escape(t.example)}</p>" in entry, t.code


def test_the_migration_fills_only_the_empty_examples_of_preset_types():
    version = Taxonomy.load_preset("interaction-smells")
    types = version.types_by_code()
    Type.objects.filter(pk=types["code_rollback"].pk).update(example="")
    Type.objects.filter(pk=types["must_do_omission"].pk).update(example="")
    Type.objects.filter(pk=types["signature_mismatch"].pk).update(example="Our own example.")
    other = Taxonomy.create_from_data(
        {
            "slug": "ours",
            "name": "Ours",
            "axes": [
                {
                    "code": "a",
                    "name": "A",
                    "categories": [
                        {"name": "C", "types": [{"code": "code_rollback", "name": "Rollback"}]}
                    ],
                }
            ],
        }
    )
    before = {t.pk: (t.code, t.name, t.definition, t.hotkey) for t in Type.objects.all()}

    MIGRATION.fill(django_apps, None)

    preset = MIGRATION.EXAMPLES["interaction-smells"]
    assert Type.objects.get(pk=types["code_rollback"].pk).example == preset["code_rollback"]
    assert Type.objects.get(pk=types["must_do_omission"].pk).example == preset["must_do_omission"]
    assert Type.objects.get(pk=types["signature_mismatch"].pk).example == "Our own example."
    assert Type.objects.get(axis__version=other, code="code_rollback").example == ""
    # nothing but the example changes: codes, names, definitions and keys stay
    assert {t.pk: (t.code, t.name, t.definition, t.hotkey) for t in Type.objects.all()} == before

    MIGRATION.empty(django_apps, None)  # reversed: only what it filled is emptied
    assert Type.objects.get(pk=types["code_rollback"].pk).example == ""
    assert Type.objects.get(pk=types["signature_mismatch"].pk).example == "Our own example."


def test_the_migrations_examples_are_the_presets():
    for slug, examples in MIGRATION.EXAMPLES.items():
        data = preset_data(slug, 1)  # the migration filled version 1's types
        in_file = {
            t["code"]: t["example"]
            for axis in data["axes"]
            for category in axis["categories"]
            for t in category["types"]
        }
        assert examples == in_file, slug
