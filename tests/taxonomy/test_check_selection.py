"""One per-axis label limit for the form, the importer and the API (issue 7, point 13b)."""

from __future__ import annotations

import pytest

from annotation.api.serializers import AnnotationInputSerializer
from annotation.forms import AnnotationForm
from annotation.importers.annotations import LabelRecordError, resolve_labels
from tests.factories import make_study

pytestmark = pytest.mark.django_db

TOO_MANY = ["effort_or_trust_cost", "code_or_task_damage"]
MESSAGE = (
    "Outcome: at most 1 type(s) per card. "
    "Got effort_or_trust_cost, code_or_task_damage (axis 'outcome')."
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
