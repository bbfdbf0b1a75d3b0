from __future__ import annotations

import pytest

from taxonomy.models import Taxonomy, Type
from tests.factories import make_study

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


def test_the_agent_misalignment_preset_has_four_axes():
    version = Taxonomy.load_preset("agent-misalignment")
    axes = {a.code: a for a in version.axes.all()}
    assert list(axes) == ["symptom", "cause", "outcome", "resolution"]
    assert axes["cause"].max_labels == 2
    assert not axes["outcome"].multi_select and not axes["resolution"].multi_select


def test_a_version_used_by_a_study_is_frozen():
    study = make_study()
    study.taxonomy_version.refresh_from_db()
    assert study.taxonomy_version.frozen
