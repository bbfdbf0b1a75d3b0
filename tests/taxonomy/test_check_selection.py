"""One per-axis label limit for the form, the importer and the API (issue 7, point 13b), and
one rule for an axis's condition (issue 21 point 5: damage locus only when the severity is
above DS1, resolver only when the resolution is visible), episodes' labels included."""

from __future__ import annotations

import pytest

from annotation.api.serializers import AnnotationInputSerializer
from annotation.episodes.labels import axes_of, check_labels
from annotation.forms import AnnotationForm
from annotation.importers.annotations import LabelRecordError, resolve_labels
from tests.factories import make_study

pytestmark = pytest.mark.django_db

TOO_MANY = ["DS1", "DS2"]
MESSAGE = "Damage severity: at most 1 type(s) per card. Got DS1, DS2 (axis 'damage_severity')."
OFF_CONDITION = ["DS1", "code_or_task"]
CONDITION = (
    "Damage locus: only when Damage severity is DS2 or DS3 (axis 'damage_locus'); "
    "got code_or_task with Damage severity DS1."
)


@pytest.fixture
def version():
    return make_study("s2", taxonomy="agent-misalignment").taxonomy_version


def test_it_names_the_axis_and_its_limit(version):
    types = [version.types_by_code()[c] for c in TOO_MANY]
    with pytest.raises(ValueError) as e:
        version.check_selection(types)
    assert str(e.value) == MESSAGE
    version.check_selection(types[:1])  # within the limit: no error


def test_the_form_the_importer_and_the_api_refuse_with_the_same_words(version):
    form = AnnotationForm({"types": TOO_MANY}, types=version.type_list())
    assert not form.is_valid()
    assert form.non_field_errors() == [MESSAGE]

    with pytest.raises(LabelRecordError) as e:
        resolve_labels(TOO_MANY, version.types_by_code(), version)
    assert str(e.value) == f"labels: {MESSAGE}"

    api = AnnotationInputSerializer(
        data={"labels": TOO_MANY}, context={"taxonomy_version": version}
    )
    assert not api.is_valid()
    assert api.errors["labels"] == [MESSAGE]


def test_an_axis_with_a_condition_is_refused_until_it_holds(version):
    types = version.types_by_code()
    with pytest.raises(ValueError) as e:
        version.check_selection([types[c] for c in OFF_CONDITION])
    assert str(e.value) == CONDITION
    with pytest.raises(ValueError, match="Damage locus: only when Damage severity is DS2 or DS3"):
        version.check_selection([types["code_or_task"]])  # no severity at all
    with pytest.raises(ValueError, match="Resolver: only when Resolution status is visible"):
        version.check_selection([types["status_unknown"], types["RV2"]])
    # the condition holds: no error
    version.check_selection([types[c] for c in ("DS3", "external", "visible", "RV1")])
    version.check_selection([types[c] for c in ("DS2", "status_unknown")])


def test_the_form_the_importer_the_api_and_the_episodes_refuse_a_condition_alike(version):
    form = AnnotationForm({"types": OFF_CONDITION}, types=version.type_list())
    assert not form.is_valid()
    assert form.non_field_errors() == [CONDITION]
    with pytest.raises(LabelRecordError) as e:
        resolve_labels(OFF_CONDITION, version.types_by_code(), version)
    assert str(e.value) == f"labels: {CONDITION}"
    api = AnnotationInputSerializer(
        data={"labels": OFF_CONDITION}, context={"taxonomy_version": version}
    )
    assert not api.is_valid()
    assert api.errors["labels"] == [CONDITION]
    axes = axes_of(version)
    with pytest.raises(ValueError) as e:
        check_labels({"damage_severity": ["DS1"], "damage_locus": ["code_or_task"]}, axes)
    assert str(e.value) == f"labels.damage_locus: {CONDITION}"
    ok = {
        "damage_severity": "DS2",
        "damage_locus": ["code_or_task"],
        "resolution_status": "visible",
        "resolver": ["RV2"],
    }
    assert check_labels(ok, axes)["resolver"] == ["RV2"]
