"""load_records, data_stamp and compute_study_report straight from the database."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.agreement import rows
from annotation.agreement.data import compute_study_report, data_stamp, load_records
from annotation.agreement.extras import build_extras
from annotation.agreement.stats import agreement_report
from annotation.agreement.versus import versus_reference
from annotation.db import columns as columns_module
from annotation.models import Annotation, CardState, Comment, Consensus, Conversation, StudyGold
from tests.factories import (
    AMBIGUOUS,
    INCOMPLETE,
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_study,
    make_user,
)
from tests.report.helpers import named, named_extras, named_report

pytestmark = pytest.mark.django_db

SMELLS = [
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


def as_set(records) -> set[tuple]:
    return {
        (r.card, r.annotator, r.group, r.labels)
        for r in records[["card", "annotator", "group", "labels"]].itertuples()
    }


def test_it_loads_the_current_round_1_labels_of_both_groups(study, labelled):
    t1, t2, t3, t4 = (t.pk for t in labelled["t"])
    u1, u2 = (u.pk for u in labelled["u"])
    data = load_records(study)
    assert list(data) == ["smell"]
    records, codes, consensus = data["smell"]
    assert codes == SMELLS
    f = frozenset
    assert as_set(records) == {
        (t1, "alice", "g1", f({AMBIGUOUS, ROLLBACK})),
        (t1, "bob", "g1", f({AMBIGUOUS, ROLLBACK})),
        (t2, "alice", "g1", f({AMBIGUOUS})),
        (t2, "bob", "g1", f({INCOMPLETE})),
        (t3, "alice", "g1", f()),  # "no smell" is a record, not missing
        (t3, "bob", "g1", f()),
        (t4, "alice", "g1", f({ROLLBACK})),  # bob's record on t4 is missing: no row
        (u1, "charlie", "g2", f()),
        (u1, "dave", "g2", f({INCOMPLETE})),
        (u2, "charlie", "g2", f({INCOMPLETE})),
    }
    assert len(records) == 10
    # consensus: unanimous on t1 and t3 in round 1, by discussion on t2 in round 2
    assert consensus == {t1: f({AMBIGUOUS, ROLLBACK}), t2: f({INCOMPLETE}), t3: f()}


def test_it_loads_only_the_round_asked_for(study, labelled):
    t2 = labelled["t"][1].pk
    u1 = labelled["u"][0].pk
    records, _, _ = load_records(study, round=2)["smell"]
    inc = frozenset({INCOMPLETE})
    assert as_set(records) == {
        (t2, "alice", "g1", inc),
        (t2, "bob", "g1", inc),
        (u1, "charlie", "g2", inc),
    }


def test_it_takes_a_revised_label_not_the_one_it_replaced(study, labelled, alice):
    t4 = labelled["t"][3]
    label(t4, alice, AMBIGUOUS, INCOMPLETE)  # t4 is still open: bob has not labelled it
    records, _, _ = load_records(study)["smell"]
    mine = records[(records.card == t4.pk) & (records.annotator == "alice")]
    assert list(mine.labels) == [frozenset({AMBIGUOUS, INCOMPLETE})]


def test_it_leaves_out_other_studies(study, labelled, alice, bob):
    other = make_study("other")
    g = make_group(other, "g", [alice, bob])
    c = make_conversation(other, "x", n_turns=1, group=g)
    label(c.turns.get(), alice, ROLLBACK)
    records, _, _ = load_records(study)["smell"]
    assert len(records) == 10
    assert as_set(load_records(other)["smell"][0]) == {
        (c.turns.get().pk, "alice", "g", frozenset({ROLLBACK}))
    }


def test_it_gives_every_axis_its_own_label_sets(alice, bob):
    study = make_study("multi", taxonomy="agent-misalignment")
    g = make_group(study, "g", [alice, bob])
    turn = make_conversation(study, "c", n_turns=1, group=g).turns.get()
    label(turn, alice, "scope_overreach", "visible", "RV2")
    label(turn, bob, "scope_overreach")
    data = load_records(study)
    assert set(data) == {
        "symptom",
        "cause",
        "damage_severity",
        "damage_locus",
        "resolution_status",
        "resolver",
    }
    labels = {
        axis: dict(zip(r.annotator, r.labels, strict=True)) for axis, (r, _, _) in data.items()
    }
    assert labels["symptom"] == {"alice": {"scope_overreach"}, "bob": {"scope_overreach"}}
    # no type of an axis = the empty set on that axis, not a missing record
    assert labels["resolver"] == {"alice": {"RV2"}, "bob": frozenset()}
    assert labels["cause"] == {"alice": frozenset(), "bob": frozenset()}
    assert data["resolver"][1] == ["RV1", "RV2", "RV3"]


def test_it_costs_the_same_queries_for_a_bigger_study(study, labelled, alice, bob):
    with CaptureQueriesContext(connection) as small:
        load_records(study)
    g1 = labelled["groups"][0]
    for i in range(5):
        for turn in make_conversation(study, f"more-{i}", n_turns=3, group=g1).turns.all():
            label(turn, alice, ROLLBACK)
            label(turn, bob, AMBIGUOUS)
    with CaptureQueriesContext(connection) as big:
        records, _, _ = load_records(study)["smell"]
    assert len(records) == 10 + 30
    assert len(big) == len(small)


def test_the_report_is_the_agreement_report_of_the_loaded_records(study, labelled):
    result = compute_study_report(study, n_boot=50, seed=3)
    records, codes, consensus = load_records(study)["smell"]
    expected = agreement_report(records, codes, consensus, n_boot=50, seed=3)
    # the job keys pairs by user ids and names both (a name may hold "|"); by names, the
    # same pairs
    assert named_report(result["axes"]["smell"]["report"]) == expected
    assert (result["study"], result["round"], result["seed"]) == ("s1", 1, 3)
    assert result["taxonomy_version"] == str(study.taxonomy_version)
    assert result["data_stamp"] == data_stamp(study)
    assert isinstance(result["axes"]["smell"]["extras"], dict)
    report = expected
    assert (report["n_cards"], report["n_annotators"], report["n_annotations"]) == (6, 4, 10)
    assert set(report["pairs"]) == {"alice|bob", "charlie|dave"}
    assert report["pairs"]["alice|bob"]["n_common_cards"] == 3
    assert report["prevalence"][INCOMPLETE] == pytest.approx(1 / 3)


def test_the_stamp_changes_with_labels_and_consensus_and_nothing_else(study, labelled, alice):
    t = labelled["t"]
    before = data_stamp(study)
    Comment.objects.create(turn=t[1], author=alice, round=2, text="why?")
    make_conversation(study, "new", n_turns=2, group=labelled["groups"][0])
    assert data_stamp(study) == before

    label(t[3], alice, AMBIGUOUS)  # a revision of alice's open round-1 label
    after_revision = data_stamp(study)
    assert after_revision != before

    label(t[3], alice, AMBIGUOUS)  # identical: no new revision, nothing changes
    assert data_stamp(study) == after_revision

    CardState.objects.get(turn=t[0]).reopen()  # the consensus is no longer current
    reopened = data_stamp(study)
    assert reopened != after_revision
    assert reopened["consensus_current"] == after_revision["consensus_current"] - 1


def test_a_study_nobody_labelled_yet_gives_nulls_with_reasons(study):
    report = compute_study_report(study, n_boot=10)["axes"]["smell"]["report"]
    assert (report["n_cards"], report["pairs"]) == (0, {})
    assert report["krippendorff_alpha_nominal"] is None
    assert report["krippendorff_alpha_nominal_reason"].startswith("undefined")


def without_time(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "computed_at"}


def test_the_job_reads_each_table_once_and_never_encodes_label_sets(study, labelled, monkeypatch):
    expected = compute_study_report(study, n_boot=20, seed=1)

    def label_sets_encoded(*args, **kwargs):
        raise AssertionError("label sets encoded into bitmasks again")

    monkeypatch.setattr("annotation.agreement.stats._label_masks", label_sets_encoded)
    with CaptureQueriesContext(connection) as queries:
        result = compute_study_report(study, n_boot=20, seed=1)
    assert without_time(result) == without_time(expected)
    # the data stamp comes from the rows read, not from a second scan
    for table in ("annotation_annotation", "annotation_consensus"):
        reads = [q for q in queries if re.search(rf"\b{table}\b", q["sql"])]
        assert len(reads) == 1, [q["sql"] for q in reads]


def _set_types(decision, study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    decision.types.set([by_code[c] for c in codes])


def test_judges_shared_cards_and_the_gold_give_the_numbers_of_the_label_set_path(
    study, alice, bob, charlie
):
    """The job's arrays against the public functions on load_records' label sets, on a
    study with a judge, a conversation two groups share, someone since removed, the lead's
    study gold, and another study whose labels' ids interleave with this one's."""
    dave, judge, zoe = make_user("dave"), make_user("llm"), make_user("zoe")
    g1 = make_group(study, "g1", [alice, bob])
    g1.judges.add(judge)
    g2 = make_group(study, "g2", [charlie, dave])
    own = make_conversation(study, "own", n_turns=3, group=g1).turns.all()
    conversation = make_conversation(study, "shared", n_turns=3, group=g1)
    Conversation.objects.filter(pk=conversation.pk).assign(g2)
    shared = conversation.turns.all()
    other = make_study("other")
    g3 = make_group(other, "g3", [alice, bob])
    elsewhere = make_conversation(other, "x", n_turns=3, group=g3).turns.all()
    by_code = study.taxonomy_version.types_by_code()

    def give(turn, user, *codes):
        Annotation.record(turn=turn, annotator=user, types=[by_code[c] for c in codes])

    for i, turn in enumerate(own):
        give(turn, alice, AMBIGUOUS, *[ROLLBACK] * (i % 2))
        give(elsewhere[i], alice, ROLLBACK)  # the other study's labels, ids in between
        give(turn, bob, *[AMBIGUOUS] * (i != 1))
        give(elsewhere[i], bob)
        give(turn, judge, INCOMPLETE)
    for i, turn in enumerate(shared):
        give(turn, alice, ROLLBACK)
        give(turn, bob, *[ROLLBACK] * (i != 2))
        give(turn, charlie, *[ROLLBACK, INCOMPLETE][: i + 1])
        give(turn, dave, ROLLBACK)
    give(shared[0], zoe, AMBIGUOUS)  # seated nowhere: no group
    version = study.taxonomy_version
    for group, turn, codes in [
        (g1, own[0], [AMBIGUOUS]),
        (g1, shared[0], [ROLLBACK]),
        (g2, shared[0], [ROLLBACK]),  # the groups agree: the study gold
        (g1, shared[1], [ROLLBACK]),
        (g2, shared[1], [INCOMPLETE]),  # they differ: the lead decides
        (g1, shared[2], []),  # g2 has not decided: no gold yet
    ]:
        decision = Consensus.objects.create(
            turn=turn, group=group, method="discussion", from_round=1, taxonomy_version=version
        )
        _set_types(decision, study, *codes)
    lead = StudyGold.objects.create(study=study, turn=shared[1], taxonomy_version=version)
    _set_types(lead, study, INCOMPLETE, ROLLBACK)

    result = compute_study_report(study, n_boot=40, seed=5)["axes"]["smell"]
    records, codes, gold = load_records(study)["smell"]
    f = frozenset
    assert gold == {
        own[0].pk: f({AMBIGUOUS}),
        shared[0].pk: f({ROLLBACK}),
        shared[1].pk: f({INCOMPLETE, ROLLBACK}),
    }
    keys = zip(records.card, records.annotator, strict=True)
    groups = dict(zip(keys, records.group, strict=True))
    assert groups[(shared[0].pk, "charlie")] == "g2" and groups[(shared[0].pk, "bob")] == "g1"
    assert groups[(shared[0].pk, "zoe")] == "(no group)"
    assert groups[(own[0].pk, "llm")] == "g1"
    assert len(records) == 3 * 3 + 3 * 4 + 1
    voting = records[records.annotator != "llm"]
    expected = agreement_report(voting, codes, gold, n_boot=40, seed=5)
    assert named_report(result["report"]) == expected
    assert named_extras(result["extras"]) == build_extras(voting, codes, gold)
    assert result["versus_consensus"] == versus_reference(records, gold, codes, n_boot=40, seed=5)
    assert "llm" in result["versus_consensus"]
    assert "llm" not in {p[w]["name"] for p in result["report"]["pairs"].values() for w in "ab"}
    between = result["between_groups"]
    assert between["n_cards"] == 2 and list(named(between["pairs"])) == ["g1|g2"]
    assert named(between["pairs"])["g1|g2"]["percent_agreement"] == 0.5
    assert list(between["pairs"]) == [f"{g1.pk}|{g2.pk}"]  # the groups' ids


@pytest.mark.postgres
def test_copy_gives_the_rows_a_cursor_gives(study, labelled, monkeypatch):
    monkeypatch.setattr(columns_module, "COPY_BLOCK_BYTES", 40)  # a block ends inside a row
    for sql, params in [
        (rows._annotations_sql(), [True, 1, study.pk]),
        (rows._consensus_sql(), [True, study.pk]),
        (rows._members_sql(), [study.pk, study.pk]),
    ]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            expected = sorted(cursor.fetchall())
        columns = rows.read_columns(sql, params, len(expected[0]))
        assert sorted(zip(*(c.tolist() for c in columns), strict=True)) == expected
