"""The agreement job's "Machine judges" section (issue 22 point 5): each run against its
group's consensus and the study gold, the same numbers judges.py gives on the same sets
(cards of the conversations it read, "no smell" where it wrote nothing), the group's
annotators beside it, the runs against each other, the scored run's curves and its
development-split threshold."""

from __future__ import annotations

import pytest

from annotation.agreement.data import compute_study_report
from annotation.agreement.judges import model_vs_model, versus_sets
from annotation.models import Consensus, JudgeRunStatus

from .scores_world import DETECTOR_SCORES, LLM_LABELS, judged_study

pytestmark = pytest.mark.django_db

N_BOOT = 60


def _g1_consensus(world) -> dict:
    return {
        c.turn_id: c.codes
        for c in Consensus.objects.current().filter(group=world["g1"]).prefetch_related("types")
    }


def _codes(study) -> list[str]:
    return list(study.taxonomy_version.types_by_code())


def test_a_study_without_runs_has_no_judges_section(study):
    from tests.report.helpers import labelled_study

    labelled_study(study)
    assert "judges" not in compute_study_report(study, n_boot=0)


def test_each_run_against_the_consensus_is_judges_py_on_its_cards(study):
    world = judged_study(study)
    section = compute_study_report(study, n_boot=N_BOOT, seed=3)["judges"]
    assert section["pseudo_users"] == ["det-code-rollback@1", "llm-gpt-x@3fa2c1"]
    assert [r["judge"] for r in section["runs"]] == ["code-rollback", "llm-annotate"]
    turns = world["g1_turns"]
    conversation = {t.pk: t.conversation_id for t in turns}
    consensus = _g1_consensus(world)
    llm_sets = {t.pk: frozenset() for t in turns}  # the cards it left: "no smell"
    llm_sets.update({t.pk: frozenset(s) for t, s in zip(turns, LLM_LABELS, strict=False)})
    run = section["axes"]["smell"]["runs"][str(world["llm"].pk)]
    expected = versus_sets(
        {"llm-gpt-x@3fa2c1": llm_sets}, consensus, conversation, _codes(study),
        n_boot=N_BOOT, seed=3,
    )["llm-gpt-x@3fa2c1"]  # fmt: skip
    assert run["consensus"] == expected
    assert run["n_cards"] == 6 and run["consensus"]["n_cards"] == len(consensus)
    # one group: the study gold is its consensus
    assert run["gold"] == expected


def test_the_ceiling_is_the_groups_annotators_on_the_same_cards(study):
    world = judged_study(study)
    section = compute_study_report(study, n_boot=N_BOOT, seed=3)["judges"]
    ceiling = section["axes"]["smell"]["runs"][str(world["detector"].pk)]["ceiling"]
    assert sorted(ceiling["consensus"]) == ["alice", "bob"]  # G1's, no judge, not G2's
    result = compute_study_report(study, n_boot=N_BOOT, seed=3)
    # on G1's only conversation, the same as the report's own annotator-vs-consensus
    assert ceiling["gold"]["alice"] == result["axes"]["smell"]["versus_consensus"]["alice"]


def test_model_vs_model_compares_the_two_runs_on_the_cards_both_read(study):
    world = judged_study(study)
    section = compute_study_report(study, n_boot=N_BOOT, seed=3)["judges"]
    (pair,) = section["axes"]["smell"]["model_vs_model"]
    assert (pair["a"], pair["b"]) == (world["detector"].pk, world["llm"].pk)
    codes = _codes(study)
    from annotation.agreement.judges import masks_of

    turns = world["g1_turns"]
    ids = [t.pk for t in turns]
    detector = [{c for c, s in scores.items() if s >= 0.5} for scores in DETECTOR_SCORES]
    llm = LLM_LABELS + [set(), set()]
    import numpy as np

    expected = model_vs_model(
        codes,
        (np.array(ids), masks_of(detector, codes)),
        (np.array(ids), masks_of(llm, codes)),
        {t.pk: t.conversation_id for t in turns},
        n_boot=N_BOOT,
        seed=3,
    )
    assert {k: v for k, v in pair.items() if k not in ("a", "b")} == expected
    assert pair["accuracy"] == pytest.approx(3 / 6)  # cards 1, 3 and 6


def test_a_scored_run_has_its_curves_and_a_dev_test_threshold(study):
    world = judged_study(study)
    section = compute_study_report(study, n_boot=N_BOOT, seed=3, dev_share=0.5)["judges"]
    run = section["axes"]["smell"]["runs"][str(world["detector"].pk)]
    # the gold: G1 agreed on cards 1, 3 and 5 ({must_do_omission}, {}, {signature_mismatch})
    assert run["pr"]["must_do_omission"]["points"] == [[0.9, 1.0, 1.0]]
    assert run["pr"]["code_rollback"]["points"] == [[0.2, 0.0, None]]  # no gold card has it
    assert run["pr"]["signature_mismatch"]["points"] == [[0.8, 1.0, 1.0]]
    assert run["dev_test"]["dev_share"] == 0.5 and run["dev_test"]["seed"] == 3
    assert "pr" not in section["axes"]["smell"]["runs"][str(world["llm"].pk)]
    again = compute_study_report(study, n_boot=N_BOOT, seed=3, dev_share=0.5)["judges"]
    assert again["axes"] == section["axes"]


def test_planned_runs_and_runs_of_other_rounds_are_left_out(study):
    world = judged_study(study)
    world["llm"].status = JudgeRunStatus.PLANNED
    world["llm"].save()
    section = compute_study_report(study, n_boot=0)["judges"]
    assert [r["id"] for r in section["runs"]] == [world["detector"].pk]
    # the judges' labels are round-1 labels: a round-2 report has no judges section
    assert "judges" not in compute_study_report(study, round=2, n_boot=0)


def _reversed(value):
    """Every object's keys in reverse order (as PostgreSQL's jsonb may give them back)."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def test_the_tables_keep_the_runs_and_the_taxonomys_order_whatever_the_keys_order(study):
    from annotation.agreement.spec import taxonomy_entries
    from annotation.agreement.tables import report_spec

    world = judged_study(study)
    result = compute_study_report(study, n_boot=0)
    entries, _ = taxonomy_entries(study.taxonomy_version)
    for stored in (result, _reversed(result)):
        (axis,) = report_spec(stored, entries)
        scores = next(t for t in axis.tables if t.id == "judge-scores")
        assert [r.name for r in scores.rows if r.css == "judge"][:1] == [
            f"code-rollback@1 (run {world['detector'].pk})"
        ]
        ceiling = [r.name.split("|")[1] for r in scores.rows if r.css == "ceiling"][:2]
        assert ceiling == ["alice", "bob"]
        per_type = next(t for t in axis.tables if t.id == "judge-per-type")
        assert [r.label for r in per_type.rows] == [e.code for e in entries["smell"]]
