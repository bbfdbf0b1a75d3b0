"""TaxonomyVersion.derive (the new version an accepted proposal makes) and proposals on a
taxonomy with several axes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Annotation, Proposal, Role, Study
from taxonomy.keys import SINGLE_KEYS, type_keys
from taxonomy.models import Taxonomy
from tests.factories import make_conversation, make_group, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents(alice, bob):
    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    turn = make_conversation(study, "session-1", n_turns=1, group=group).turns.get()
    return study, turn


def test_it_gives_an_added_type_the_next_free_hotkey_and_a_unique_code():
    v1 = Taxonomy.load_preset("agent-misalignment")
    shown = type_keys(v1.type_list())
    v2, added = v1.derive(
        add=[
            {"name": "Scope overreach", "definition": "again"},  # the code exists already
            {"name": "Silent retry", "definition": "retries without saying so"},
        ]
    )
    types = v2.types_by_code()
    assert added == {"Scope overreach": "scope_overreach_2", "Silent retry": "silent_retry"}
    # the next keys no type had on the form; every kept type keeps the key it showed
    fresh = [k for k in SINGLE_KEYS if k not in shown.values()]
    assert (types["scope_overreach_2"].hotkey, types["silent_retry"].hotkey) == tuple(fresh[:2])
    assert all(types[code].hotkey == key for code, key in shown.items())
    assert types["silent_retry"].axis.code == "symptom"  # the first axis by default
    assert types["silent_retry"].category.name == "Proposed"
    # axes keep their rules
    assert {a.code: (a.multi_select, a.max_labels) for a in v2.axes.all()} == {
        a.code: (a.multi_select, a.max_labels) for a in v1.axes.all()
    }
    v3, added = v2.derive(add=[{"name": "Silent retry", "definition": "x"}])
    assert added == {"Silent retry": "silent_retry_2"}
    assert v3.types_by_code()["silent_retry_2"].hotkey == fresh[2]


def test_it_renames_a_type_keeping_its_code():
    v1 = Taxonomy.load_preset("interaction-smells")
    v2, _ = v1.derive(rename={"code_rollback": "Reverted code"})
    assert v2.types_by_code()["code_rollback"].name == "Reverted code"
    assert v1.types_by_code()["code_rollback"].name != "Reverted code"
    assert v2.code_map()["code_rollback"] == ["code_rollback"]
    with pytest.raises(ValueError, match="unknown type code"):
        v1.derive(rename={"nope": "x"})


def test_it_refuses_an_unknown_axis_and_leaves_no_version():
    v1 = Taxonomy.load_preset("interaction-smells")
    with pytest.raises(ValueError, match="unknown axis 'nope'"):
        v1.derive(add=[{"name": "X", "axis": "nope"}])
    assert v1.taxonomy.versions.count() == 1


def test_two_studies_on_one_version_get_their_own_new_versions(alice, lead, study):
    other = make_study("s2")
    assert other.taxonomy_version == study.taxonomy_version
    for s in (study, other):
        group = make_group(s, f"g-{s.slug}", [alice])
        turn = make_conversation(s, f"c-{s.slug}", n_turns=1, group=group).turns.get()
        s.add_member(lead, Role.LEAD)
        Proposal.propose(
            study=s, turn=turn, proposer=alice, name=f"Idea {s.slug}", definition="d", reason="r"
        ).accept(lead)
    study.refresh_from_db()
    other.refresh_from_db()
    assert (study.taxonomy_version.number, other.taxonomy_version.number) == (2, 3)
    assert other.taxonomy_version.parent.number == 1
    assert "idea_s1" not in other.taxonomy_version.types_by_code()


def test_it_proposes_for_the_chosen_axis(client, agents, alice, lead):
    study, turn = agents
    client.force_login(alice)
    card = client.get(reverse("card", args=[study.slug, turn.pk])).content.decode()
    assert '<option value="damage_severity">Damage severity</option>' in card
    data = {"name": "Lost afternoon", "definition": "d", "reason": "r", "axis": "damage_severity"}
    client.post(reverse("propose", args=[study.slug, turn.pk]), data, HTTP_HX_REQUEST="true")
    p = Proposal.objects.get()
    assert p.axis.code == "damage_severity"
    p.accept(lead)
    added = Study.objects.get(pk=study.pk).taxonomy_version.types_by_code()["lost_afternoon"]
    assert (added.axis.code, added.category.name) == ("damage_severity", "Proposed")


def test_map_on_a_single_select_axis_pre_ticks_the_type_in_place_of_the_other(agents, alice, lead):
    study, turn = agents
    by_code = study.taxonomy_version.types_by_code()
    Annotation.submit(
        turn=turn,
        group=turn.conversation.groups.get(),
        annotator=alice,
        types=[by_code["scope_overreach"], by_code["DS1"]],
    )
    p = Proposal.propose(
        study=study, turn=turn, proposer=alice, name="X", definition="d", reason="r"
    )
    p.map_to(lead, "DS3")
    a = Annotation.objects.get(turn=turn, annotator=alice, is_current=True)
    stored = {t.code for t in a.types.all()}
    assert stored == {"scope_overreach", "DS1"}  # unchanged
    shown = Proposal.objects.pretick(alice, turn, stored, by_code)
    assert shown == {"scope_overreach", "DS3"}
