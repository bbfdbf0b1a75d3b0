"""Taxonomy evolution (issue 11 point 4): a merge and a split in a later version carry the
study's labels and consensus exactly as the mapping says, with the history kept and the old
version's report unchanged; a split waits for each annotator's own side; a new version only
after a confirmation; only the lead and the experts make one."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.agreement.data import compute_study_report, load_records
from annotation.agreement.render import to_csv, to_markdown
from annotation.agreement.spec import taxonomy_entries
from annotation.evidence import EvidenceSpan
from annotation.evolution import EvolutionError, answer_split, evolve, preview
from annotation.exports import gold_rows, raw_rows
from annotation.models import (
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Conversation,
    Job,
    Kind,
    Method,
    Proposal,
    Role,
    Study,
    TaxonomyMove,
)
from taxonomy.models import TaxonomyVersion
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db

V1_CODES = [
    "ambiguous_instruction",
    "incomplete_instruction",
    "must_do_omission",
    "must_not_violation",
    "signature_mismatch",
    "cross_turn_inconsistency",
    "partial_functionality_breakdown",
    "code_rollback",
    "repetitive_response",
]
# v2: two constraint types merged into a new one, Code Rollback split in two, a rename
SPEC = {
    "merge": [
        {
            "into": "Constraint violation",
            "from": ["must_do_omission", "must_not_violation"],
            "definition": "The reply breaks a constraint stated earlier.",
        }
    ],
    "split": [
        {
            "code": "code_rollback",
            "into": [
                {"name": "Fix rollback", "definition": "reintroduces a fixed defect"},
                {"name": "Feature rollback", "definition": "removes a working feature"},
            ],
        }
    ],
    "rename": {"ambiguous_instruction": "Ambiguous request"},
}
MERGED, FIX, FEATURE = "constraint_violation", "fix_rollback", "feature_rollback"


def codes_of(row) -> set[str]:
    return {t.code for t in row.types.all()}


def current(turn, user, round=1) -> Annotation:
    return Annotation.objects.get(turn=turn, annotator=user, round=round, is_current=True)


def without_time(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("computed_at", "data_stamp")}


@pytest.fixture
def group(study, alice, bob, moderator):
    return make_group(study, "g1", [alice, bob], moderator=moderator)


@pytest.fixture
def turns(study, group):
    return list(make_conversation(study, "conv", n_turns=6, group=group).turns.all())


@pytest.fixture
def labelled(turns, alice, bob):
    """t0 unanimous on a merged type; t1 disputed across the merge (merged: now equal);
    t2 disputed with a split type; t3 unanimous on the split type; t4 unanimous "no smell";
    t5 only alice, with the split type (round 1 still open)."""
    t0, t1, t2, t3, t4, t5 = turns
    label(t0, alice, "must_do_omission")
    label(t0, bob, "must_do_omission")
    label(t1, alice, "must_do_omission")
    label(t1, bob, "must_not_violation")
    label(t2, alice, "code_rollback", "ambiguous_instruction")
    label(t2, bob, "ambiguous_instruction")
    label(t3, alice, "code_rollback")
    label(t3, bob, "code_rollback")
    label(t4, alice)
    label(t4, bob)
    label(t5, alice, "code_rollback")
    return turns


# -- derive: merge and split ---------------------------------------------------------------------


def test_it_derives_a_merge_and_a_split_with_an_explicit_mapping(study):
    v1 = study.taxonomy_version
    v2, created = v1.derive(**SPEC)
    assert created == {"Constraint violation": MERGED, "Fix rollback": FIX,
                       "Feature rollback": FEATURE}  # fmt: skip
    mapping = v2.code_map()
    assert mapping["must_do_omission"] == mapping["must_not_violation"] == [MERGED]
    assert mapping["code_rollback"] == [FIX, FEATURE]
    assert mapping["ambiguous_instruction"] == ["ambiguous_instruction"]
    assert set(mapping) == set(V1_CODES)
    types = v2.types_by_code()
    # a merged or split type's code leaves the version; a renamed one keeps its code
    assert not {"must_do_omission", "must_not_violation", "code_rollback"} & set(types)
    assert types["ambiguous_instruction"].name == "Ambiguous request"
    assert types[FIX].category.name == "Historical Response Violation"
    assert types[MERGED].definition == "The reply breaks a constraint stated earlier."
    # version 1 is untouched
    assert set(v1.types_by_code()) == set(V1_CODES)
    changes = v2.changes()
    assert [(o, t.code) for o, t in changes["renamed"]] == [
        ("Ambiguous Instruction", "ambiguous_instruction")
    ]
    assert [({s.code for s in f}, t.code) for f, t in changes["merged"]] == [
        ({"must_do_omission", "must_not_violation"}, MERGED)
    ]
    assert [(o.code, [t.code for t in p]) for o, p in changes["split"]] == [
        ("code_rollback", [FIX, FEATURE])
    ]
    assert changes["added"] == []


def test_a_retired_code_is_never_given_again(study):
    v2, _ = study.taxonomy_version.derive(**SPEC)
    v3, created = v2.derive(add=[{"name": "Code rollback", "definition": "again"}])
    # code_rollback meant the old, unsplit type: the new one gets another code
    assert created["Code rollback"] == "code_rollback_2"


def test_merging_into_an_existing_type_keeps_its_code(study):
    v2, _ = study.taxonomy_version.derive(
        merge=[{"into": "must_do_omission", "from": ["must_not_violation"]}],
        rename={"must_do_omission": "Constraint violation"},
    )
    assert v2.code_map()["must_not_violation"] == ["must_do_omission"]
    assert v2.types_by_code()["must_do_omission"].name == "Constraint violation"
    assert "must_not_violation" not in v2.types_by_code()


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"merge": [{"into": "X", "from": ["code_rollback"]}]}, "at least two types"),
        ({"merge": [{"into": "X", "from": ["code_rollback", "nope"]}]}, "unknown type code"),
        ({"split": [{"code": "code_rollback", "into": ["Only one"]}]}, "at least two types"),
        (
            {
                "split": [{"code": "code_rollback", "into": ["A", "B"]}],
                "merge": [{"into": "X", "from": ["code_rollback", "must_do_omission"]}],
            },
            "'code_rollback' is already in the merge into 'X'",
        ),
        (
            {
                "split": [{"code": "code_rollback", "into": ["A", "B"]}],
                "rename": {"code_rollback": "Z"},
            },  # fmt: skip
            "does not stay",
        ),
    ],
)
def test_a_change_that_cannot_be_made_says_why_and_creates_nothing(study, spec, message):
    with pytest.raises(ValueError, match=message):
        study.taxonomy_version.derive(**spec)
    assert TaxonomyVersion.objects.count() == 1


# -- the move: annotations and consensus carried as the mapping says ----------------------------


def test_a_merge_and_a_split_carry_annotations_as_the_mapping_says(
    study, labelled, alice, bob, lead
):
    t0, t1, t2, t3, t4, t5 = labelled
    v1 = study.taxonomy_version
    before = {a.pk: codes_of(a) for a in Annotation.objects.filter(is_current=True)}
    move = evolve(study, SPEC, lead)
    study.refresh_from_db()
    v2 = study.taxonomy_version
    assert (v2.parent, v2.frozen, move.from_version, move.to_version) == (v1, True, v1, v2)

    assert codes_of(current(t0, alice)) == {MERGED}
    assert codes_of(current(t1, bob)) == {MERGED}  # must_not_violation: merged too
    assert codes_of(current(t4, alice)) == set()
    # a split type: the rest of the set is carried; the side waits for alice
    carried = current(t2, alice)
    assert codes_of(carried) == {"ambiguous_instruction"}
    assert carried.split_pending == "code_rollback"
    assert current(t2, bob).split_pending == ""
    # never overwritten: every old row is kept as it was, retired by the move
    for pk, codes in before.items():
        old = Annotation.objects.get(pk=pk)
        assert (old.is_current, old.retired_by, old.taxonomy_version) == (False, move, v1)
        assert codes_of(old) == codes
        new = Annotation.objects.get(carried_from=old)
        assert (new.is_current, new.taxonomy_version, new.annotator_id, new.turn_id) == (
            True,
            v2,
            old.annotator_id,
            old.turn_id,
        )
    assert Annotation.objects.filter(is_current=True).count() == len(before)
    assert move.counts["annotations"] == len(before)
    assert move.counts["annotations_pending"] == 4  # t2 alice, t3 alice and bob, t5 alice
    assert move.counts["cards_queued"] == 3


def test_consensus_is_carried_and_a_split_one_goes_to_the_moderator(study, labelled, group, lead):
    t0, t1, t2, t3, t4, t5 = labelled
    k0 = Consensus.objects.get(turn=t0, is_current=True)
    k3 = Consensus.objects.get(turn=t3, is_current=True)
    move = evolve(study, SPEC, lead)
    v2 = Study.objects.get(pk=study.pk).taxonomy_version
    new0 = Consensus.objects.get(turn=t0, group=group, is_current=True)
    assert codes_of(new0) == {MERGED}
    assert (new0.taxonomy_version, new0.method, new0.carried_from) == (v2, Method.UNANIMOUS, k0)
    k0.refresh_from_db()
    assert (k0.is_current, k0.retired_by, codes_of(k0)) == (False, move, {"must_do_omission"})
    assert codes_of(Consensus.objects.get(turn=t4, is_current=True)) == set()
    # a consensus with the split type is not guessed: the moderator decides it on v2
    assert not Consensus.objects.filter(turn=t3, is_current=True).exists()
    k3.refresh_from_db()
    assert (k3.is_current, k3.retired_by) == (False, move)
    assert CardState.objects.get(turn=t3, group=group).status == CardStatus.ESCALATED
    assert move.counts["consensus_to_moderator"] == 1


def test_the_old_versions_report_is_unchanged_by_the_move(study, labelled, alice, lead):
    v1 = study.taxonomy_version
    old_report = compute_study_report(study, n_boot=30, seed=3)
    old_records = load_records(study)
    evolve(study, SPEC, lead)
    study.refresh_from_db()
    # labels given after the move change the new version's report only
    answer_split(current(labelled[2], alice), alice, {"code_rollback": [FIX]})
    again = compute_study_report(study, n_boot=30, seed=3, version=v1)
    assert without_time(again) | {"taxonomy_version_is_current": True} == without_time(old_report)
    assert again["taxonomy_version"] == "interaction-smells v1"
    assert again["taxonomy_version_is_current"] is False
    for axis, (records, codes, gold) in load_records(study, version=v1).items():
        old, old_codes, old_gold = old_records[axis]
        assert records.equals(old) and codes == old_codes and gold == old_gold
    new = compute_study_report(study, n_boot=0, version=None)
    assert new["taxonomy_version"] == "interaction-smells v2"
    assert MERGED in new["axes"]["smell"]["report"]["prevalence"]


def test_a_label_waiting_for_its_side_is_in_no_statistic(study, labelled, alice, bob, lead):
    evolve(study, SPEC, lead)
    (records, _, _) = load_records(study)["smell"]
    pending = Annotation.objects.filter(is_current=True, round=1).exclude(split_pending="")
    assert pending.count() == 4
    seen = set(zip(records.card, records.annotator, strict=True))
    for row in pending:
        assert (row.turn_id, row.annotator.username) not in seen
    assert (
        len(records)
        == Annotation.objects.filter(is_current=True, round=1, split_pending="").count()
    )


def test_the_annotator_chooses_the_side_and_the_round_goes_on(
    study, labelled, alice, bob, group, lead
):
    t5 = labelled[5]
    evolve(study, SPEC, lead)
    # bob labels the card; alice's label still waits for her side: nothing is decided
    label(t5, bob, FIX)
    state = CardState.objects.get(turn=t5, group=group)
    assert state.status == CardStatus.OPEN
    assert not Consensus.objects.filter(turn=t5, is_current=True).exists()
    waiting = current(t5, alice)
    answer = answer_split(waiting, alice, {"code_rollback": [FIX]})
    assert codes_of(answer) == {FIX} and answer.split_pending == ""
    assert answer.carried_from_id == waiting.carried_from_id
    waiting.refresh_from_db()
    assert waiting.is_current is False  # history kept
    state.refresh_from_db()
    assert state.status == CardStatus.AGREED
    consensus = Consensus.objects.get(turn=t5, is_current=True)
    assert (codes_of(consensus), consensus.method) == ({FIX}, Method.UNANIMOUS)


def test_a_split_answer_must_choose_one_of_the_parts(study, labelled, alice, lead):
    evolve(study, SPEC, lead)
    waiting = current(labelled[2], alice)
    with pytest.raises(EvolutionError, match="choose at least one of Fix rollback, Feature"):
        answer_split(waiting, alice, {})
    with pytest.raises(EvolutionError, match="not ambiguous_instruction"):
        answer_split(waiting, alice, {"code_rollback": ["ambiguous_instruction"]})
    assert current(labelled[2], alice).pk == waiting.pk  # nothing saved


def test_a_new_move_waits_for_the_split_answers(study, labelled, alice, bob, lead):
    evolve(study, SPEC, lead)
    with pytest.raises(EvolutionError, match="4 labels still wait"):
        evolve(study, {"rename": {"repetitive_response": "Repeats"}}, lead)
    assert TaxonomyMove.objects.count() == 1


# -- property: every carried label is the mapping applied to its own label ---------------------


@st.composite
def changes(draw):
    """A random set of changes over the nine codes: each kept, renamed, in one of two
    merge groups, or split."""
    ops = draw(st.lists(st.sampled_from(["keep", "rename", "m0", "m1", "split"]),
                        min_size=9, max_size=9))  # fmt: skip
    spec = {"rename": {}, "merge": [], "split": []}
    groups: dict[str, list[str]] = {"m0": [], "m1": []}
    for code, op in zip(V1_CODES, ops, strict=True):
        if op == "rename":
            spec["rename"][code] = f"Renamed {code}"
        elif op == "split":
            spec["split"].append({"code": code, "into": [f"{code} A", f"{code} B"]})
        elif op in groups:
            groups[op].append(code)
    for key, codes in groups.items():
        if len(codes) >= 2:
            into = codes[0] if draw(st.booleans()) else f"Merged {key}"
            spec["merge"].append({"into": into, "from": codes})
    return spec


label_sets = st.lists(
    st.lists(st.sampled_from(V1_CODES), max_size=3, unique=True), min_size=8, max_size=8
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
@given(spec=changes(), sets=label_sets)
def test_every_carried_label_is_the_mapping_of_its_own_label(spec, sets):
    with transaction.atomic():
        study = make_study("prop")
        alice, bob = make_user("p-alice"), make_user("p-bob")
        group = make_group(study, "g", [alice, bob])
        turns = list(make_conversation(study, "c", n_turns=4, group=group).turns.all())
        for i, codes in enumerate(sets):
            label(turns[i // 2], (alice, bob)[i % 2], *codes)
        before = {a.pk: codes_of(a) for a in Annotation.objects.filter(is_current=True)}
        consensus_before = {k.pk: codes_of(k) for k in Consensus.objects.filter(is_current=True)}
        move = evolve(study, spec)
        mapping = move.to_version.code_map()
        split = {c for c, t in mapping.items() if len(t) > 1}
        # nothing dropped: every label is carried, once
        assert Annotation.objects.filter(retired_by=move).count() == len(before)
        for pk, codes in before.items():
            carried = Annotation.objects.get(carried_from_id=pk)
            assert codes_of(carried) == {mapping[c][0] for c in codes if c not in split}
            assert carried.split_pending.split() == sorted(codes & split)
            assert codes_of(Annotation.objects.get(pk=pk)) == codes  # the old row as it was
        for pk, codes in consensus_before.items():
            successor = Consensus.objects.filter(carried_from_id=pk).first()
            if codes & split:
                assert successor is None
            else:
                assert codes_of(successor) == {mapping[c][0] for c in codes}
        transaction.set_rollback(True)


# -- the pages: confirmation required, access --------------------------------------------------


def form_for(study, **fields) -> dict:
    """The taxonomy form as the page posts it: every type's name as it is, plus `fields`."""
    data = {f"name-{t.code}": t.name for t in study.taxonomy_version.type_list()}
    data.update(fields)
    return data


MERGE_AND_SPLIT = {
    "merge-must_do_omission": "A",
    "merge-must_not_violation": "A",
    "merge-name-A": "Constraint violation",
    "split-code_rollback": "Fix rollback: reintroduces a fixed defect\n"
    "Feature rollback: removes a working feature",
}


def test_the_preview_says_what_changes_and_changes_nothing(client, study, labelled, lead):
    client.force_login(lead)
    url = reverse("taxonomy_preview", args=[study.slug])
    r = client.post(url, form_for(study, **MERGE_AND_SPLIT))
    html = r.content.decode()
    assert r.status_code == 200
    assert "Create interaction-smells v2 and move the study to it?" in html
    assert "Must-Do Omission (<code>must_do_omission</code>) + Must-Not Violation" in html
    assert "<strong>11</strong> current annotations carried" in html
    assert "<strong>4</strong> labels of a split type on <strong>3</strong> cards" in html
    assert "<strong>1</strong> with a split type" in html
    assert TaxonomyVersion.objects.count() == 1
    assert not TaxonomyMove.objects.exists()
    assert Annotation.objects.filter(is_current=True, taxonomy_version__number=1).count() == 11


def test_a_post_without_the_confirmation_changes_nothing(client, study, labelled, lead):
    client.force_login(lead)
    spec = json.dumps(SPEC)
    url = reverse("taxonomy_confirm", args=[study.slug])
    fields = {"spec": spec, "from_version": study.taxonomy_version_id}
    r = client.post(url, fields)
    assert r.status_code == 422 and "Not confirmed: nothing was changed." in r.content.decode()
    assert TaxonomyVersion.objects.count() == 1 and not TaxonomyMove.objects.exists()
    r = client.post(url, {**fields, "confirm": "1"})
    assert r.status_code == 302
    study.refresh_from_db()
    assert study.taxonomy_version.number == 2 and TaxonomyMove.objects.count() == 1


def test_a_stale_confirmation_is_refused(client, study, labelled, lead):
    client.force_login(lead)
    old = study.taxonomy_version_id
    evolve(study, {"rename": {"repetitive_response": "Repeats"}}, lead)
    url = reverse("taxonomy_confirm", args=[study.slug])
    r = client.post(url, {"spec": json.dumps(SPEC), "from_version": old, "confirm": "1"})
    assert r.status_code == 422 and "review the changes again" in r.content.decode()
    assert TaxonomyMove.objects.count() == 1


def test_a_bad_form_names_what_is_wrong_and_changes_nothing(client, study, lead):
    client.force_login(lead)
    url = reverse("taxonomy_preview", args=[study.slug])
    r = client.post(url, form_for(study, **{"merge-code_rollback": "B",
                                            "split-must_do_omission": "Only one"}))  # fmt: skip
    html = r.content.decode()
    assert r.status_code == 422
    assert "Merge B: a merge takes at least two types; only one has B." in html
    assert "Split of “Must-Do Omission”: give at least two new types" in html
    assert TaxonomyVersion.objects.count() == 1


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_only_the_lead_and_experts_reach_the_taxonomy_pages(client, study, labelled, who):
    user = make_user(who)
    client.force_login(user)
    assert client.get(reverse("taxonomy", args=[study.slug])).status_code == 403
    r = client.post(reverse("taxonomy_preview", args=[study.slug]), form_for(study))
    assert r.status_code == 403
    fields = {"spec": json.dumps(SPEC), "from_version": study.taxonomy_version_id, "confirm": 1}
    r = client.post(reverse("taxonomy_confirm", args=[study.slug]), fields)
    assert r.status_code == 403
    assert TaxonomyVersion.objects.count() == 1


def test_an_expert_may_make_a_version_and_a_stranger_gets_a_404(client, study, labelled):
    erin = make_user("erin")
    study.add_member(erin, Role.MODERATOR, Kind.EXPERT)
    client.force_login(erin)
    assert client.get(reverse("taxonomy", args=[study.slug])).status_code == 200
    client.force_login(make_user("mallory"))
    assert client.get(reverse("taxonomy", args=[study.slug])).status_code == 404
    assert client.get(reverse("split_queue", args=[study.slug])).status_code == 404


def test_the_split_queue_shows_only_my_labels_and_refuses_anothers(
    client, study, labelled, alice, bob, lead
):
    evolve(study, SPEC, lead)
    client.force_login(bob)
    html = client.get(reverse("split_queue", args=[study.slug])).content.decode()
    assert html.count('class="panel split-question"') == 1  # t3: bob's own
    alices = current(labelled[2], alice)
    url = reverse("split_answer", args=[study.slug, alices.pk])
    r = client.post(url, {"side-code_rollback": FIX})
    assert r.status_code == 404
    assert current(labelled[2], alice).pk == alices.pk
    client.force_login(alice)
    r = client.post(url, {"side-code_rollback": FEATURE})
    assert r.status_code == 302
    assert codes_of(current(labelled[2], alice)) == {"ambiguous_instruction", FEATURE}


def test_accepting_a_proposal_asks_for_a_confirmation_first(client, study, labelled, alice, lead):
    p = Proposal.propose(
        study=study, turn=labelled[0], proposer=alice, name="Silent retry",
        definition="d", reason="r",
    )  # fmt: skip
    client.force_login(lead)
    url = reverse("proposal_decide", args=[study.slug, p.pk])
    r = client.post(url, {"action": "accept", "category": ""}, HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert r.status_code == 200
    assert "Accepting creates interaction-smells v2" in html
    assert "<strong>Silent retry</strong> (<code>silent_retry</code>, in Proposed)" in html
    assert "No label moves" in html
    p.refresh_from_db()
    assert p.status == "pending" and TaxonomyVersion.objects.count() == 1
    r = client.post(url, {"action": "accept", "category": "", "confirm": "1"},
                    HTTP_HX_REQUEST="true")  # fmt: skip
    p.refresh_from_db()
    assert p.status == "accepted" and TaxonomyVersion.objects.count() == 2


# -- every report and export names its version -------------------------------------------------


def test_exports_name_the_taxonomy_version_and_leave_a_waiting_label_out(
    study, labelled, alice, bob, lead
):
    rows = list(gold_rows(study))
    assert {r["label_taxonomy_version"] for r in rows} == {"interaction-smells v1"}
    evolve(study, SPEC, lead)
    study.refresh_from_db()
    rows = {r["turn"]: r for r in gold_rows(study)}
    assert {r["label_taxonomy_version"] for r in rows.values()} == {"interaction-smells v2"}
    assert rows[1]["labels_alice"] == [MERGED]
    assert rows[1]["taxonomy_version"] == "interaction-smells v2"  # the consensus's
    assert rows[3]["labels_alice"] is None  # waiting for her side: not guessed
    assert rows[3]["labels_bob"] == ["ambiguous_instruction"]
    raw = [r for r in raw_rows(study) if r["turn"] == 3 and r["annotator"] == "alice"]
    assert [(r["taxonomy_version"], r["is_current"], r["split_pending"]) for r in raw] == [
        ("interaction-smells v1", False, ""),
        ("interaction-smells v2", True, "code_rollback"),
    ]


def test_the_report_downloads_name_the_version(study, labelled):
    result = compute_study_report(study, n_boot=0)
    entries = taxonomy_entries(study.taxonomy_version)[0]
    assert to_markdown(result, entries).startswith(
        "# Agreement: s1, round 1, taxonomy interaction-smells v1"
    )
    assert ",report,,taxonomy_version,,interaction-smells v1," in to_csv(result, entries)


def test_the_agreement_job_computes_on_the_version_chosen(
    client, study, labelled, lead, settings, media, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    v1 = study.taxonomy_version
    evolve(study, SPEC, lead)
    client.force_login(lead)
    url = reverse("job_agreement", args=[study.slug])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"round": 1, "version": v1.pk})
    job = Job.objects.get()
    assert job.params["version"] == v1.pk
    job.refresh_from_db()
    assert job.result["taxonomy_version"] == "interaction-smells v1", job.error
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    assert "Computed on interaction-smells v1, a version the study has moved away from" in html


def test_preview_is_the_move(study, labelled, lead):
    said = preview(study, SPEC)
    move = evolve(study, SPEC, lead)
    assert said["counts"] == move.counts
    assert said["to_version"] == str(move.to_version)


def test_a_damaged_confirmation_says_so_and_changes_nothing(client, study, labelled, lead):
    client.force_login(lead)
    url = reverse("taxonomy_confirm", args=[study.slug])
    for spec in ("not json", '{"rename": ["x"]}', '{"drop": []}', '{"merge": [1]}'):
        data = {"spec": spec, "from_version": study.taxonomy_version_id, "confirm": "1"}
        r = client.post(url, data)
        assert r.status_code == 422, spec
        assert "The confirmation form was damaged" in r.content.decode()
    assert TaxonomyVersion.objects.count() == 1 and not TaxonomyMove.objects.exists()


def test_a_confirmation_nested_too_deep_says_so_and_changes_nothing(client, study, labelled, lead):
    """json.loads recursed into a RecursionError on it (a 500)."""
    client.force_login(lead)
    url = reverse("taxonomy_confirm", args=[study.slug])
    spec = '{"add": ' + "[" * 5_000 + "]" * 5_000 + "}"
    data = {"spec": spec, "from_version": study.taxonomy_version_id, "confirm": "1"}

    r = client.post(url, data)

    assert r.status_code == 422
    assert "The confirmation form was damaged" in r.content.decode()
    assert TaxonomyVersion.objects.count() == 1 and not TaxonomyMove.objects.exists()


def test_the_agreement_command_computes_on_an_old_version(study, labelled, lead):
    evolve(study, SPEC, lead)
    out = io.StringIO()
    call_command(
        "agreement", "s1", "--taxonomy-version", "1", "--json", "--bootstrap", "0", stdout=out
    )
    assert json.loads(out.getvalue())["taxonomy_version"] == "interaction-smells v1"
    with pytest.raises(CommandError, match="has no v7"):
        call_command("agreement", "s1", "--taxonomy-version", "7", stdout=io.StringIO())


def test_an_imported_label_waits_too_for_the_split_side(
    study, labelled, alice, bob, group, lead, tmp_path
):
    t5 = labelled[5]
    evolve(study, SPEC, lead)
    path = tmp_path / "labels.jsonl"
    record = {"conversation": "conv", "turn": 6, "annotator": "bob", "labels": [FIX], "group": "g1"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    call_command("import_annotations", "s1", str(path), stdout=io.StringIO())
    assert codes_of(current(t5, bob)) == {FIX}
    # alice's label still waits for her side: the card is not decided on a guess
    assert CardState.objects.get(turn=t5, group=group).status == CardStatus.OPEN
    assert not Consensus.objects.filter(turn=t5, is_current=True).exists()
    answer_split(current(t5, alice), alice, {"code_rollback": [FEATURE]})
    assert CardState.objects.get(turn=t5, group=group).status == CardStatus.DISPUTED


def test_the_card_says_its_label_waits_for_a_side(client, study, labelled, alice, bob, lead):
    evolve(study, SPEC, lead)
    client.force_login(alice)
    html = client.get(reverse("card", args=[study.slug, labelled[2].pk])).content.decode()
    assert 'id="split-pending"' in html and "was split in interaction-smells v2" in html
    html = client.get(reverse("card", args=[study.slug, labelled[0].pk])).content.decode()
    assert 'id="split-pending"' not in html


def test_the_moderator_decides_a_split_consensus_on_the_new_version(
    study, labelled, group, moderator, lead
):
    t3 = labelled[3]
    evolve(study, SPEC, lead)
    version = Study.objects.get(pk=study.pk).taxonomy_version
    fix = version.types_by_code()[FIX]
    consensus = CardState.decide(t3, group, moderator, [fix], "a fixed defect came back")
    assert (consensus.taxonomy_version, consensus.method, codes_of(consensus)) == (
        version,
        Method.MODERATOR,
        {FIX},
    )


def test_a_carried_label_keeps_its_evidence_quote_and_where_it_is_from(
    study, turns, alice, bob, lead
):
    """The quote's span (annotation/evidence.py) goes with the label: a move that dropped it
    would leave a quote that no longer says where it was read."""
    t0 = turns[0]
    quote = t0.user_text[:5]
    label(t0, alice, "must_do_omission", evidence=quote, span=EvidenceSpan(t0.pk, "user", 0, 5))
    evolve(study, SPEC, lead)
    carried = current(t0, alice)
    assert carried.carried_from is not None
    assert (carried.evidence, carried.span) == (quote, EvidenceSpan(t0.pk, "user", 0, 5))


def test_a_dispute_a_merge_dissolves_is_agreed_and_the_page_shows_the_original_labels(
    client, study, labelled, group, alice, bob, lead
):
    """Issue 20, defect 7: t1 was disputed only on two types the merge joins. On the new
    version its round-1 sets are identical: the card is agreed (unanimous, from round 1, under
    the new version), and the discussion page shows each annotator's original round-1 labels
    beside the carried ones, never the carry as a revision."""
    t1, t2 = labelled[1], labelled[2]
    assert CardState.objects.get(turn=t1, group=group).status == CardStatus.DISPUTED
    move = evolve(study, SPEC, lead)
    state = CardState.objects.get(turn=t1, group=group)
    assert (state.status, state.round) == (CardStatus.AGREED, 1)
    consensus = Consensus.objects.get(turn=t1, group=group, is_current=True)
    assert (codes_of(consensus), consensus.method, consensus.from_round) == (
        {MERGED},
        Method.UNANIMOUS,
        1,
    )
    assert consensus.taxonomy_version == move.to_version
    assert move.counts.get("disputes_dissolved") == 1
    # t2 still differs (and waits for alice's split side): it stays disputed
    assert CardState.objects.get(turn=t2, group=group).status == CardStatus.DISPUTED

    client.force_login(alice)
    html = client.get(reverse("discussion", args=[study.slug, t1.pk])).content.decode()
    rounds = html[html.index('id="rounds"') : html.index("</section>", html.index('id="rounds"'))]
    assert ">revised<" not in rounds
    assert rounds.count("data-carried") == 2  # each annotator's round-1 label was carried
    assert "Must-Not Violation" in rounds and "Must-Do Omission" in rounds  # as they were
    assert str(move.from_version) in rounds


def test_the_confirmation_says_how_many_disputes_the_merge_dissolves(study, labelled, lead):
    said = preview(study, SPEC)
    assert said["counts"]["disputes_dissolved"] == 1  # t1; t2 waits for a split side
    assert CardState.objects.get(turn=labelled[1]).status == CardStatus.DISPUTED  # unchanged


def test_a_dispute_dissolves_in_its_group_though_another_group_decided_the_card(study, lead):
    """A card two groups share: decided in A, disputed in B only on the merged types. The
    move agrees B's dispute; A's consensus is carried as it was."""
    a1, a2, b1, b2 = (make_user(n) for n in ("a1", "a2", "b1", "b2"))
    group_a = make_group(study, "A", [a1, a2])
    group_b = make_group(study, "B", [b1, b2])
    turn = make_conversation(study, "shared", n_turns=1, group=group_a).turns.get()
    Conversation.objects.filter(pk=turn.conversation_id).assign(group_b)
    label(turn, a1, "incomplete_instruction", group=group_a)
    label(turn, a2, "incomplete_instruction", group=group_a)
    label(turn, b1, "must_do_omission", group=group_b)
    label(turn, b2, "must_not_violation", group=group_b)
    assert CardState.objects.get(turn=turn, group=group_b).status == CardStatus.DISPUTED
    evolve(study, SPEC, lead)
    assert CardState.objects.get(turn=turn, group=group_b).status == CardStatus.AGREED
    decided = Consensus.objects.get(turn=turn, group=group_b, is_current=True)
    assert (codes_of(decided), decided.method) == ({MERGED}, Method.UNANIMOUS)
    assert Consensus.objects.filter(turn=turn, group=group_a, is_current=True).count() == 1
