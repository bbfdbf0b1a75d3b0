"""The agent-misalignment preset as the study has it (issue 21 point 5): version 2 recasts
outcome into damage severity and locus, and resolution into resolution status and resolver
(TaxonomyVersion.derive's `recast`: one code of an old axis -> one code on each of several
new axes). New studies start on it; a study on version 1 moves to it through taxonomy
evolution (manage.py upgrade_preset), every label, consensus and episode judgement carried
exactly, and its agreement is then computed on the new sub-axes."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.agreement.data import load_records
from annotation.episodes.report import episode_measures
from annotation.evolution import EvolutionError, evolve
from annotation.models import (
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Episode,
    EpisodeJudgement,
    Method,
    Study,
    TaxonomyMove,
)
from taxonomy.keys import type_keys
from taxonomy.models import Taxonomy, TaxonomyVersion
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

SLUG = "agent-misalignment"
# the study's mapping (TAXONOMY.md section 2), written out plainly
OUTCOME = {
    "effort_or_trust_cost": {"DS1"},
    "code_or_task_damage": {"DS2", "code_or_task"},
    "project_state_damage": {"DS3", "project"},
    "external_state_damage": {"DS3", "external"},
}
RESOLUTION = {
    "developer_pushback": {"visible", "RV2"},
    "self_corrected": {"visible", "RV1"},
    "unknown": {"status_unknown"},
}
SYMPTOMS = ["scope_overreach", "faulty_implementation", "inaccurate_self_reporting"]
CAUSES = ["instruction_following_failure", "underspecified_instruction"]
NEW_AXES = ["symptom", "cause", "damage_severity", "damage_locus", "resolution_status", "resolver"]
NEW_CODE_AXIS = {
    "DS1": "damage_severity", "DS2": "damage_severity", "DS3": "damage_severity",
    "code_or_task": "damage_locus", "project": "damage_locus", "external": "damage_locus",
    "visible": "resolution_status", "status_unknown": "resolution_status",
    "RV1": "resolver", "RV2": "resolver", "RV3": "resolver",
}  # fmt: skip


def expected(codes) -> set[str]:
    out: set[str] = set()
    for code in codes:
        out |= OUTCOME.get(code) or RESOLUTION.get(code) or {code}
    return out


def v1() -> TaxonomyVersion:
    Taxonomy.load_preset(SLUG)
    return TaxonomyVersion.objects.get(taxonomy__slug=SLUG, preset_version=1)


def old_study(slug: str = "old") -> Study:
    """A study made on the preset's version 1, as studies were before version 2."""
    return Study.objects.create(slug=slug, name=slug, taxonomy_version=v1())


def codes_of(row) -> set[str]:
    return {t.code for t in row.types.all()}


def test_a_new_study_starts_on_version_2_with_the_studys_finer_axes():
    version = Taxonomy.load_preset(SLUG)
    assert version.preset_version == 2 and version.parent == v1()
    axes = {a.code: a for a in version.axes.all()}
    assert list(axes) == NEW_AXES
    assert axes["cause"].max_labels == 2
    for code in NEW_AXES[2:]:
        assert not axes[code].multi_select, code
    assert axes["damage_locus"].when == {"damage_severity": ["DS2", "DS3"]}
    assert axes["resolver"].when == {"resolution_status": ["visible"]}
    assert {t.code: t.axis.code for t in version.type_list() if t.axis.code in NEW_AXES[2:]} == (
        NEW_CODE_AXIS
    )
    assert Taxonomy.load_preset(SLUG) == version  # made once
    # the old version's types are no longer the preset's
    assert "outcome" not in axes and "resolution" not in axes


def test_an_existing_version_1_is_the_parent_of_version_2():
    """A database whose studies use version 1 (made before version 2 existed, marked by the
    migration) gets version 2 derived from that very version, so its studies can move."""
    study = old_study()
    v = study.taxonomy_version
    v.preset_version = None
    v.save()  # as the migration found it ...
    TaxonomyVersion.objects.filter(preset_version=2).delete()
    v.preset_version = 1  # ... and marked it
    v.save()
    assert Taxonomy.load_preset(SLUG).parent_id == v.pk


@pytest.fixture
def people():
    return make_user("alice"), make_user("bob"), make_user("mod")


@pytest.fixture
def labelled(people):
    """A study on version 1: cards labelled on the old axes (one agreed, one disputed), a
    consensus, and episode judgements."""
    alice, bob, mod = people
    study = old_study()
    group = make_group(study, "g", [alice, bob], moderator=mod)
    turns = list(make_conversation(study, "c", n_turns=3, group=group).turns.all())
    label(turns[0], alice, "scope_overreach", "code_or_task_damage", "developer_pushback")
    label(turns[0], bob, "scope_overreach", "code_or_task_damage", "developer_pushback")
    label(turns[1], alice, "faulty_implementation", "effort_or_trust_cost", "unknown")
    label(turns[1], bob, "faulty_implementation", "project_state_damage", "self_corrected")
    label(turns[2], alice, "external_state_damage")
    egroup = make_group(study, "e", [alice, bob])
    conversation = study.conversations.get()
    episodes = [
        Episode.objects.create(conversation=conversation, first_turn=1, last_turn=2, goal="a"),
        Episode.objects.create(conversation=conversation, first_turn=2, last_turn=3, goal="b"),
    ]
    judged = {
        (0, alice): {"symptom": ["scope_overreach"], "outcome": ["code_or_task_damage"],
                     "resolution": ["developer_pushback"]},
        (0, bob): {"symptom": ["scope_overreach"], "outcome": ["effort_or_trust_cost"],
                   "resolution": ["developer_pushback"]},
        (1, alice): {"outcome": ["external_state_damage"], "resolution": ["unknown"]},
        (1, bob): {"outcome": ["external_state_damage"], "resolution": ["self_corrected"]},
    }  # fmt: skip
    for (i, who), labels in judged.items():
        EpisodeJudgement.objects.create(
            episode=episodes[i], annotator=who, group=egroup, round=1, valid=True,
            labels=labels, taxonomy_version=study.taxonomy_version,
        )  # fmt: skip
    return {"study": study, "turns": turns, "episodes": episodes, "group": group}


def test_upgrade_preset_carries_every_label_consensus_and_judgement_exactly(labelled):
    study = labelled["study"]
    old_version = study.taxonomy_version
    first = labelled["turns"][0]
    assert CardState.objects.get(turn=first).status == CardStatus.AGREED
    before = {a.pk: codes_of(a) for a in Annotation.objects.filter(is_current=True)}
    consensus = {c.pk: codes_of(c) for c in Consensus.objects.filter(is_current=True)}
    judgements = {j.pk: j.labels for j in EpisodeJudgement.objects.filter(is_current=True)}
    assert consensus and len(judgements) == 4

    out = io.StringIO()
    call_command("upgrade_preset", study.slug, stdout=out)

    study.refresh_from_db()
    assert study.taxonomy_version == Taxonomy.load_preset(SLUG)
    move = TaxonomyMove.objects.get(study=study)
    assert f"{old_version} -> {study.taxonomy_version}: 5 annotations" in out.getvalue()
    assert Annotation.objects.filter(retired_by=move).count() == len(before)
    for pk, codes in before.items():
        carried = Annotation.objects.get(carried_from_id=pk, is_current=True)
        assert codes_of(carried) == expected(codes)
        assert carried.split_pending == ""
        assert codes_of(Annotation.objects.get(pk=pk)) == codes  # the old row as it was
        # every carried label meets the new version's conditions
        study.taxonomy_version.check_selection(list(carried.types.select_related("axis")))
    for pk, codes in consensus.items():
        assert codes_of(Consensus.objects.get(carried_from_id=pk)) == expected(codes)
    for pk, labels in judgements.items():
        carried = EpisodeJudgement.objects.get(carried_from_id=pk)
        assert carried.is_current and carried.taxonomy_version == study.taxonomy_version
        flat = {c for codes in labels.values() for c in codes}
        assert {c for codes in carried.labels.values() for c in codes} == expected(flat)
        for axis, codes in carried.labels.items():
            assert all(NEW_CODE_AXIS.get(c, axis) == axis for c in codes)
        old = EpisodeJudgement.objects.get(pk=pk)
        assert not old.is_current and old.retired_by == move and old.labels == labels
    # the first card agreed before and after; its consensus carried
    assert CardState.objects.get(turn=first).status == CardStatus.AGREED
    assert Consensus.objects.get(turn=first, is_current=True).method == Method.UNANIMOUS


def test_an_extractors_labels_are_carried_too(labelled):
    """An extraction run's labels (Episode.run_labels, the model's annotation scored
    against the gold) are on the study's version as the judgements are: carried with them,
    so that the run's accuracy compares codes of one version."""
    study = labelled["study"]
    first, second = labelled["episodes"]
    run_labels = {"symptom": ["scope_overreach"], "outcome": ["code_or_task_damage"],
                  "resolution": ["unknown"]}  # fmt: skip
    first.run_labels = run_labels
    first.save(update_fields=["run_labels"])
    out = io.StringIO()
    call_command("upgrade_preset", study.slug, "--dry-run", stdout=out)
    assert "episode_run_labels: 1" in out.getvalue()
    call_command("upgrade_preset", study.slug, stdout=io.StringIO())
    first.refresh_from_db()
    second.refresh_from_db()
    flat = {c for codes in run_labels.values() for c in codes}
    assert {c for codes in first.run_labels.values() for c in codes} == expected(flat)
    for axis, codes in first.run_labels.items():
        assert all(NEW_CODE_AXIS.get(c, axis) == axis for c in codes)
    assert second.run_labels == {}  # none to carry
    move = TaxonomyMove.objects.get(study=study)
    assert move.counts["episode_run_labels"] == 1


def test_agreement_is_computed_on_the_new_sub_axes(labelled):
    study = labelled["study"]
    call_command("upgrade_preset", study.slug, stdout=io.StringIO())
    study.refresh_from_db()
    data = load_records(study)
    assert set(data) == set(NEW_AXES)
    labels = {
        axis: dict(zip(r.annotator, r.labels, strict=True)) for axis, (r, _, _) in data.items()
    }
    second = labelled["turns"][1].pk
    by_turn = {
        axis: {(t, a): set(lab) for t, a, lab in zip(r.card, r.annotator, r.labels, strict=True)}
        for axis, (r, _, _) in data.items()
    }
    assert by_turn["damage_severity"][(second, "alice")] == {"DS1"}
    assert by_turn["damage_severity"][(second, "bob")] == {"DS3"}
    assert by_turn["damage_locus"][(second, "bob")] == {"project"}
    assert by_turn["resolver"][(second, "bob")] == {"RV1"}
    assert labels  # every axis has its records
    report = episode_measures(study)["overall"]["agreement"]
    pair = report["pairs"][0]
    assert set(pair["axes"]) == {"validity", *NEW_AXES}
    # the two episodes: severity differs on the first (DS2 / DS1), agrees on the second
    assert pair["axes"]["damage_severity"]["exact"] == 0.5
    assert pair["axes"]["resolution_status"]["exact"] == 0.5  # visible, then unknown / visible
    assert pair["axes"]["damage_locus"]["exact"] == 0.5  # code_or_task / none; external both


def test_the_dry_run_says_what_moves_and_changes_nothing(labelled):
    study = labelled["study"]
    out = io.StringIO()
    call_command("upgrade_preset", study.slug, "--dry-run", stdout=out)
    assert "annotations: 5" in out.getvalue()
    assert "episode_judgements: 4" in out.getvalue()
    study.refresh_from_db()
    assert study.taxonomy_version.preset_version == 1
    assert not TaxonomyMove.objects.exists()


def test_a_study_on_the_latest_version_has_nothing_to_upgrade():
    Study.objects.create(slug="new", name="n", taxonomy_version=Taxonomy.load_preset(SLUG))
    out = io.StringIO()
    call_command("upgrade_preset", "new", stdout=out)
    assert "is on its preset's latest version" in out.getvalue()


def test_a_study_with_a_version_of_its_own_is_recast_the_same_way(labelled, people):
    """A study that derived a version of its own from version 1 (a type added) gets a
    version derived from its own with the preset's recast."""
    study = labelled["study"]
    evolve(study, {"add": [{"name": "Silent give-up", "definition": "d", "axis": "symptom"}]})
    study.refresh_from_db()
    call_command("upgrade_preset", study.slug, stdout=io.StringIO())
    study.refresh_from_db()
    version = study.taxonomy_version
    assert version.preset_version is None and version.parent.preset_version is None
    codes = {t.code for t in version.type_list()}
    assert "silent_give_up" in codes and {"DS1", "RV3", "status_unknown"} <= codes
    assert not codes & (set(OUTCOME) | set(RESOLUTION))
    first = labelled["turns"][0]
    alice = people[0]
    row = Annotation.objects.get(turn=first, annotator=alice, is_current=True)
    assert codes_of(row) == {"scope_overreach", "DS2", "code_or_task", "visible", "RV2"}


def test_a_study_not_on_a_preset_is_refused():
    version = Taxonomy.create_from_data(
        {
            "slug": "own",
            "name": "Own",
            "axes": [
                {
                    "code": "a",
                    "name": "A",
                    "categories": [{"name": "C", "types": [{"code": "x", "name": "X"}]}],
                }
            ],
        }  # fmt: skip
    )
    Study.objects.create(slug="own", name="own", taxonomy_version=version)
    with pytest.raises(CommandError, match="not made from a preset"):
        call_command("upgrade_preset", "own")


RECAST_AXIS = {
    "code": "sev", "name": "Severity", "multi_select": False,
    "categories": [{"name": "S", "types": [{"code": "S1", "name": "S1"}, {"code": "S2", "name": "S2"}]}],
}  # fmt: skip
WHERE_AXIS = {
    "code": "where", "name": "Where", "multi_select": False, "when": {"sev": ["S2"]},
    "categories": [{"name": "W", "types": [{"code": "here", "name": "Here"}]}],
}  # fmt: skip
GOOD_MAP = {
    "effort_or_trust_cost": ["S1"],
    "code_or_task_damage": ["S2", "here"],
    "project_state_damage": ["S2"],
    "external_state_damage": ["S2"],
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"axis": "nope"}, "recast of axis 'nope': unknown axis"),
        ({"map": {**GOOD_MAP, "external_state_damage": []}},
         "no place for type 'external_state_damage'"),
        ({"map": {**GOOD_MAP, "effort_or_trust_cost": ["S1", "S2"]}},
         "'effort_or_trust_cost' maps to two codes of one axis"),
        ({"map": {**GOOD_MAP, "effort_or_trust_cost": ["S1", "here"]}},
         "Where: only when Severity is S2"),
        ({"map": {**GOOD_MAP, "bogus": ["S1"]}}, "bogus not a type of the axis"),
        ({"map": {**GOOD_MAP, "effort_or_trust_cost": ["RV1"]}}, "not all codes of its new axes"),
        ({"into": [{**RECAST_AXIS, "categories": [{"name": "S", "types": [
            {"code": "unknown", "name": "U"}]}]}, WHERE_AXIS]},
         "type code 'unknown' was already used"),
        ({"into": [{**RECAST_AXIS, "code": "symptom"}, WHERE_AXIS]},
         "axis code 'symptom' is already taken"),
    ],
)  # fmt: skip
def test_a_recast_that_cannot_be_made_says_why_and_creates_nothing(change, message):
    version = v1()
    n = TaxonomyVersion.objects.count()
    spec = {"axis": "outcome", "into": [RECAST_AXIS, WHERE_AXIS], "map": GOOD_MAP} | change
    with pytest.raises(ValueError, match=message), transaction.atomic():
        version.derive(recast=[spec])
    assert TaxonomyVersion.objects.count() == n
    version.derive(recast=[{"axis": "outcome", "into": [RECAST_AXIS, WHERE_AXIS], "map": GOOD_MAP}])


def test_an_episode_judgement_holding_a_split_type_stops_the_move(labelled):
    """A card's label may wait for its annotator's side of a split; an episode judgement
    has no such state, so the move is refused and nothing changes."""
    study = labelled["study"]
    with pytest.raises(EvolutionError, match="an episode judgement cannot wait"):
        evolve(study, {"split": [{"code": "scope_overreach", "into": ["Scope A", "Scope B"]}]})
    study.refresh_from_db()
    assert study.taxonomy_version.preset_version == 1
    assert not TaxonomyMove.objects.exists()
    assert EpisodeJudgement.objects.filter(is_current=True).count() == 4


def test_a_runs_label_of_a_split_type_stops_the_move(labelled):
    study = labelled["study"]
    EpisodeJudgement.objects.all().delete()
    first = labelled["episodes"][0]
    first.run_labels = {"symptom": ["scope_overreach"]}
    first.save(update_fields=["run_labels"])
    with pytest.raises(EvolutionError, match="a run's label cannot wait"):
        evolve(study, {"split": [{"code": "scope_overreach", "into": ["Scope A", "Scope B"]}]})
    first.refresh_from_db()
    assert first.run_labels == {"symptom": ["scope_overreach"]}
    assert not TaxonomyMove.objects.exists()


# -- property: every carried label is the mapping of its own label --------------------------

old_labels = st.tuples(
    st.lists(st.sampled_from(SYMPTOMS), max_size=2, unique=True),
    st.lists(st.sampled_from(CAUSES), max_size=2, unique=True),
    st.one_of(st.none(), st.sampled_from(sorted(OUTCOME))),
    st.one_of(st.none(), st.sampled_from(sorted(RESOLUTION))),
).map(lambda t: [*t[0], *t[1], *(c for c in t[2:] if c)])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sets=st.lists(old_labels, min_size=6, max_size=6))
def test_every_random_old_label_is_carried_exactly(sets):
    with transaction.atomic():
        study = old_study("prop")
        alice, bob = make_user("p-alice"), make_user("p-bob")
        group = make_group(study, "g", [alice, bob])
        turns = list(make_conversation(study, "c", n_turns=3, group=group).turns.all())
        conversation = study.conversations.get()
        episode = Episode.objects.create(conversation=conversation, first_turn=1, last_turn=3)
        egroup = make_group(study, "e", [alice, bob])
        for i, codes in enumerate(sets):
            label(turns[i // 2], (alice, bob)[i % 2], *codes)
        for who, codes in ((alice, sets[0]), (bob, sets[1])):
            by_axis: dict[str, list[str]] = {}
            for c in codes:
                axis = ("symptom" if c in SYMPTOMS else "cause" if c in CAUSES
                        else "outcome" if c in OUTCOME else "resolution")  # fmt: skip
                by_axis.setdefault(axis, []).append(c)
            EpisodeJudgement.objects.create(
                episode=episode, annotator=who, group=egroup, round=1, valid=True,
                labels=by_axis, taxonomy_version=study.taxonomy_version,
            )  # fmt: skip
        before = {a.pk: codes_of(a) for a in Annotation.objects.filter(is_current=True)}
        judged = {j.pk: j.labels for j in EpisodeJudgement.objects.filter(is_current=True)}
        call_command("upgrade_preset", "prop", stdout=io.StringIO())
        new = Study.objects.get(pk=study.pk).taxonomy_version
        for pk, codes in before.items():
            carried = Annotation.objects.get(carried_from_id=pk)
            assert codes_of(carried) == expected(codes)
            new.check_selection(list(carried.types.select_related("axis")))
        for pk, labels in judged.items():
            carried = EpisodeJudgement.objects.get(carried_from_id=pk).labels
            flat = [c for codes in labels.values() for c in codes]
            assert {c for codes in carried.values() for c in codes} == expected(flat)
            assert set(carried) <= set(NEW_AXES)
        transaction.set_rollback(True)


def test_a_recast_types_key_goes_to_its_first_new_type_without_one():
    """An annotator's key for an old type still picks (part of) what it meant; the other
    new types take keys never used, and no key is retired."""
    old = v1()
    new = Taxonomy.load_preset(SLUG)
    shown_old = type_keys(old.type_list(), old.retired_keys)
    shown_new = type_keys(new.type_list(), new.retired_keys)
    assert shown_new["DS1"] == shown_old["effort_or_trust_cost"]
    assert shown_new["DS2"] == shown_old["code_or_task_damage"]
    assert shown_new["DS3"] == shown_old["project_state_damage"]
    assert shown_new["external"] == shown_old["external_state_damage"]  # DS3 had one
    assert shown_new["visible"] == shown_old["developer_pushback"]
    assert shown_new["RV1"] == shown_old["self_corrected"]  # visible had one
    assert shown_new["status_unknown"] == shown_old["unknown"]
    fresh = {shown_new[c] for c in ("code_or_task", "project", "RV2", "RV3")}
    assert not fresh & set(shown_old.values())
    assert new.retired_keys == ""
    assert all(shown_new[c] == k for c, k in shown_old.items() if c in shown_new)
