"""The agent-misalignment preset on the card: one block per axis named with its rule and its
keys, keys that never collide across axes (nor with the card's own keys), and the server's
per-axis rule (TaxonomyVersion.check_selection): a pick-one axis takes one type, cause at
most two, damage locus only when the severity is above DS1 and resolver only when the
resolution is visible; a refusal names the axis and keeps what was stored."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.hotkeys import CARD_KEYS, NO_SMELL_KEY, type_keys
from annotation.models import Annotation
from tests.factories import HTMX, label, make_conversation, make_group, make_study

pytestmark = pytest.mark.django_db

SYMPTOMS = [
    "misread_project",
    "misread_developer_intent",
    "developer_constraint_violation",
    "scope_overreach",
    "faulty_implementation",
    "operational_execution_error",
    "inaccurate_self_reporting",
]


@pytest.fixture
def agents(alice, bob):
    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    make_conversation(study, "session-1", n_turns=2, group=group)
    return study


def card(study):
    return study.conversations.get().turns.order_by("index").first()


def post(client, study, turn, codes, **data):
    url = reverse("card", args=[study.slug, turn.pk])
    return client.post(url, {"types": codes, **data}, **HTMX)


def test_every_type_of_every_axis_has_its_own_key(agents):
    keys = type_keys(agents.taxonomy_version.type_list())
    assert len(keys) == 21 and len(set(keys.values())) == 21
    assert not set(keys.values()) & set(CARD_KEYS + NO_SMELL_KEY + "'\"")
    assert [keys[c] for c in SYMPTOMS] == list("1234567")  # the preset's keys stay


def test_the_card_has_one_block_per_axis_with_its_rule_and_keys(client, agents, alice):
    client.force_login(alice)
    html = client.get(reverse("card", args=[agents.slug, card(agents).pk])).content.decode()
    legends = [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", m)).strip()
        for m in re.findall(r'<fieldset class="axis"[^>]*><legend>(.*?)</legend>', html, re.S)
    ]
    assert legends == [
        "Symptom (any number; keys 1 2 3 4 5 6 7)",
        "Cause (at most 2; keys 8 9 a)",
        # version 2's types keep version 1's keys where they carry its types (b e g ...)
        "Damage severity (pick one; keys b e g)",
        "Damage locus (pick one; only when Damage severity is DS2 or DS3; keys l m h)",
        "Resolution status (pick one; keys i k)",
        "Resolver (pick one; only when Resolution status is visible; keys j o q)",
    ]
    # a block holds its axis's types, and a pick-one axis's boxes replace each other
    severity = re.search(
        r'<fieldset class="axis" data-axis="damage_severity">(.*?)</fieldset>', html, re.S
    )
    assert severity.group(1).count('name="types"') == 3
    assert severity.group(1).count("data-single") == 3
    # an axis with a condition says it to the page (labels.js disables it until it holds)
    assert (
        '<fieldset class="axis" data-axis="damage_locus" '
        'data-when="{&quot;damage_severity&quot;:[&quot;DS2&quot;,&quot;DS3&quot;]}">'
    ) in html
    assert "Nothing on any axis" in html


def test_a_label_on_each_axis_is_stored(client, agents, alice):
    client.force_login(alice)
    codes = [
        "scope_overreach",
        "faulty_implementation",
        "underspecified_instruction",
        "DS2",
        "code_or_task",
        "visible",
        "RV2",
    ]
    response = post(client, agents, card(agents), codes, confidence="4")
    assert response.status_code == 200
    stored = Annotation.objects.get(annotator=alice)
    assert stored.codes == set(codes) and stored.confidence == 4


@pytest.mark.parametrize(
    "codes, axis",
    [
        (["DS1", "DS2"], "Damage severity: at most 1 type(s) per card"),
        (["RV1", "RV2", "visible"], "Resolver: at most 1 type(s) per card"),
        (["DS1", "external"], "Damage locus: only when Damage severity is DS2 or DS3"),
        (["status_unknown", "RV2"], "Resolver: only when Resolution status is visible"),
        (
            ["instruction_following_failure", "underspecified_instruction", "other_indeterminate"],
            "Cause: at most 2 type(s) per card",
        ),
    ],
)
def test_a_choice_past_an_axis_limit_is_refused_naming_the_axis(client, agents, alice, codes, axis):
    turn = card(agents)
    label(turn, alice, "scope_overreach", note="mine")
    client.force_login(alice)
    response = post(client, agents, turn, ["misread_project", *codes])
    assert response.status_code == 422
    assert axis in response.content.decode()
    stored = Annotation.objects.get(annotator=alice, is_current=True)
    assert (stored.codes, stored.note) == ({"scope_overreach"}, "mine")


def test_nothing_on_any_axis_is_the_empty_set(client, agents, alice):
    client.force_login(alice)
    assert post(client, agents, card(agents), [], no_smell="1").status_code == 200
    assert Annotation.objects.get(annotator=alice).codes == set()


def test_several_symptoms_are_allowed(client, agents, alice):
    client.force_login(alice)
    assert post(client, agents, card(agents), SYMPTOMS).status_code == 200
    assert Annotation.objects.get(annotator=alice).codes == set(SYMPTOMS)
