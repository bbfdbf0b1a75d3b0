"""episode_measures and compare_runs on a study: the figures a research team reports, by
hand on a small case, overall and by a conversation metadata field."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.episodes import measures
from annotation.importers.episodes import import_episodes
from annotation.models import Episode, Group, Unit
from tests.factories import make_group, make_user

from .conftest import episode, write_jsonl

SCOPE = {"symptom": ["scope_overreach"], "cause": ["instruction_following_failure"]}


@pytest.fixture
def study(agents, tmp_path):
    """Run `gpt`: 4 lines, 1 dropped for confidence, 3 imported (s1 1-2, s1 3-4, s2 1-3);
    run `claude`: s1 1-2, s1 2-4, s2 3-3. A person's episode on s2 (turns 1-2). Two
    annotators judge gpt's three: both valid on the first (same labels), both invalid on
    the second, split on the third."""
    gpt = [
        episode("s1", 1, 2, labels=SCOPE),
        episode("s1", 3, 4, valid=False, invalid_reason="normative_prior_bias"),
        episode("s2", 1, 3, labels={"symptom": ["faulty_implementation"]}),
        episode("s2", 2, 2, confidence=0.1),
    ]
    import_episodes(agents, write_jsonl(tmp_path / "gpt.jsonl", gpt), "gpt", min_confidence=0.5)
    claude = [episode("s1", 1, 2, labels=SCOPE), episode("s1", 2, 4), episode("s2", 3, 3)]
    import_episodes(agents, write_jsonl(tmp_path / "claude.jsonl", claude), "claude")
    ann, bob = make_user("ann"), make_user("bob")
    Episode.objects.create(
        conversation=agents.conversations.get(external_id="s2"), created_by=ann,
        first_turn=1, last_turn=2, goal="missed",
    )  # fmt: skip
    group = make_group(agents, "E1", annotators=[ann, bob])
    Group.objects.filter(pk=group.pk).update(unit=Unit.EPISODE)
    e1, e2, e3 = Episode.objects.filter(run__name="gpt").order_by("conversation_id", "first_turn")
    records = []
    for who in ("ann", "bob"):
        base = {"annotator": who, "group": "E1", "run": "gpt"}
        records += [
            base | {"episode": e1.pk, "valid": True, "labels": SCOPE},
            base | {"episode": e2.pk, "valid": False, "invalid_reason": "observational_blind_spot"
                    if who == "ann" else "observational_blind_spot.invisible_agent_action"},
            base | {"episode": e3.pk, "valid": who == "ann"},
            {"conversation": "s1", "annotator": who, "group": "E1", "coverage": 2},
        ]  # fmt: skip
    records.append({"conversation": "s2", "annotator": "ann", "group": "E1", "coverage": 1})
    path = write_jsonl(tmp_path / "people.jsonl", records)
    call_command("import_annotations", "ag", path, stdout=StringIO(), stderr=StringIO())
    return agents


def measured(*args) -> dict:
    out = StringIO()
    call_command("episode_measures", "ag", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_per_run_figures(study):
    gpt = measured()["overall"]["runs"]["gpt"]
    assert (gpt["extracted"], gpt["dropped_confidence"], gpt["imported"]) == (4, 1, 3)
    assert (gpt["valid"], gpt["invalid"], gpt["disputed"], gpt["unjudged"]) == (1, 1, 1, 0)
    assert gpt["retention"] == 0.25
    assert gpt["precision"]["value"] == 0.5
    low, high = measures.wilson(1, 2)
    assert (gpt["precision"]["low"], gpt["precision"]["high"]) == (low, high)
    # the one invalid episode counts once, half under each of its two codes
    assert gpt["invalid_reasons"]["reasons"] == {
        "observational_blind_spot": {"count": 1.0, "share": 1.0}
    }
    assert gpt["invalid_reasons"]["codes"]["observational_blind_spot"]["share"] == 0.5
    verdict = gpt["run_verdict"]
    assert (verdict["judged"], verdict["invalid"]) == (1, 1)
    assert verdict["invalid_reasons"]["reasons"]["normative_prior_bias"]["share"] == 1.0


def test_coverage_and_agreement(study):
    overall = measured()["overall"]
    rating = overall["coverage"]["rating"]
    # s1 rated 2 by both, s2 rated 1: mean of the sessions' means
    assert rating["mean"] == 1.5 and rating["n"] == 2 and rating["low"] <= 1.5 <= rating["high"]
    # the person's s2 1-2 is matched by gpt's s2 1-3 (IoU 2/3)
    assert overall["coverage"]["matched_by_extracted"] == 1
    assert overall["coverage"]["matched_share"] == 1.0
    agreement = overall["agreement"]
    pair = agreement["pairs"][0]
    assert (pair["group"], pair["a"], pair["b"], pair["episodes"]) == ("E1", "ann", "bob", 3)
    validity = agreement["axes"]["validity"]
    # verdicts: (valid, valid), (invalid:a, invalid:b), (valid, invalid): 1 of 3 identical
    assert validity["exact"] == pytest.approx(1 / 3)
    assert agreement["axes"]["symptom"]["exact"] == 1.0  # only e1 is valid for both
    assert agreement["exact_match_all_axes"] == pytest.approx(1 / 3)
    assert overall["gold_episodes"] == 1
    cell = next(
        c for c in overall["cooccurrence"]["symptom_x_cause"]["cells"]
        if (c["row"], c["col"]) == ("scope_overreach", "instruction_following_failure")
    )  # fmt: skip
    assert cell["observed"] == 1


def test_every_figure_by_stratum(study):
    result = measured("--by", "modality")
    assert result["by"] == "modality" and set(result["strata"]) == {"cli", "ide"}
    cli, ide = result["strata"]["cli"], result["strata"]["ide"]
    assert (cli["runs"]["gpt"]["valid"], cli["runs"]["gpt"]["invalid"]) == (1, 1)
    assert ide["runs"]["gpt"]["disputed"] == 1 and ide["runs"]["gpt"]["extracted"] == 1
    assert cli["coverage"]["rating"]["mean"] == 2.0 and ide["coverage"]["rating"]["mean"] == 1.0
    assert ide["coverage"]["people_episodes"] == 1 and cli["coverage"]["people_episodes"] == 0


def test_the_text_report_and_an_unknown_run(study):
    out = StringIO()
    call_command("episode_measures", "ag", "--run", "gpt", stdout=out)
    text = out.getvalue()
    assert "run gpt: 4 extracted, 1 dropped for confidence, 3 imported" in text
    assert "precision 50.0%" in text and "run claude" not in text
    with pytest.raises(CommandError, match="no run 'nope' in study ag"):
        measured("--run", "nope")


def test_compare_runs(study):
    out = StringIO()
    call_command("compare_runs", "ag", "gpt", "claude", "--json", stdout=out)
    r = json.loads(out.getvalue())
    # s1: gpt 1-2 ~ claude 1-2 (1.0), gpt 3-4 ~ claude 2-4 (2/3); s2: 1-3 vs 3-3 (1/3) no
    assert (r["matched"], r["unmatched_a"], r["unmatched_b"]) == (2, 1, 1)
    assert r["iou_mean"] == pytest.approx((1 + 2 / 3) / 2)
    assert r["iou_median"] == pytest.approx((1 + 2 / 3) / 2)
    symptom = {row["code"]: row for row in r["axes"]["symptom"]}
    assert symptom["scope_overreach"]["a"]["count"] == 1
    assert symptom["faulty_implementation"]["b"] is None
    out = StringIO()
    call_command("compare_runs", "ag", "gpt", "claude", "--iou", "0.9", stdout=out)
    assert "matched 1 (IoU >= 0.9" in out.getvalue()
    with pytest.raises(CommandError, match="no run 'x'"):
        call_command("compare_runs", "ag", "gpt", "x", stdout=StringIO())


def test_heat_maps_of_the_cooccurrence_tables(study, tmp_path):
    call_command("episode_measures", "ag", "--heatmap", str(tmp_path / "maps"), stdout=StringIO())
    svg = (tmp_path / "maps" / "symptom_x_cause.svg").read_text()
    assert svg.startswith("<svg") and "scope_overreach x instruction_following_failure" in svg
    assert (tmp_path / "maps" / "symptom_x_symptom.svg").exists()


def test_an_episode_agreed_in_a_discussion_round_counts_as_its_consensus(study, tmp_path):
    """Split on gpt's third episode in round 1, ann and bob agree in the discussion round
    (valid): the episode card shows "Consensus (discussion): valid", and the measures must
    count it valid, not disputed (before the fix: round 1 only, so precision 1/2 instead of
    2/3; tests/browser/test_episode_study_flow.py found it). The invalid reasons come from
    the round that decided."""
    e2, e3 = Episode.objects.filter(run__name="gpt").order_by("conversation_id", "first_turn")[1:]
    records = [
        {"annotator": who, "group": "E1", "run": "gpt", "round": 2, "episode": e3.pk,
         "valid": True}
        for who in ("ann", "bob")
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "round2.jsonl", records)
    call_command("import_annotations", "ag", path, stdout=StringIO(), stderr=StringIO())
    gpt = measured()["overall"]["runs"]["gpt"]
    assert (gpt["valid"], gpt["invalid"], gpt["disputed"], gpt["unjudged"]) == (2, 1, 0, 0)
    assert gpt["precision"]["value"] == pytest.approx(2 / 3)
    assert gpt["retention"] == pytest.approx(2 / 4)


def test_consensus_validity_reads_the_latest_round_everyone_judged():
    def j(episode, who, r, valid, reason=""):
        return {"episode": episode, "group": "E1", "annotator": who, "round": r,
                "valid": valid, "invalid_reason": reason}  # fmt: skip

    judgements = [
        # 1: split in round 1, agreed (invalid) in round 2
        j(1, "a", 1, True), j(1, "b", 1, False, "other"),
        j(1, "a", 2, False, "other"), j(1, "b", 2, False, "other"),
        # 2: split in round 1, round 2 not complete: disputed still
        j(2, "a", 1, True), j(2, "b", 1, False, "other"), j(2, "a", 2, False, "other"),
        # 3: agreed in round 1 (labels apart), split in round 2: disputed
        j(3, "a", 1, True), j(3, "b", 1, True), j(3, "a", 2, True), j(3, "b", 2, False),
        # 4: agreed in round 1
        j(4, "a", 1, False, "other"), j(4, "b", 1, False, "normative_prior_bias"),
    ]  # fmt: skip
    assert measures.consensus_validity(judgements) == {
        1: "invalid", 2: "disputed", 3: "disputed", 4: "invalid",
    }  # fmt: skip
    run = measures.run_measures({"name": "r"}, [{"id": i} for i in (1, 2, 3, 4)], judgements)
    # episode 1's reason is its deciding round's (both "other"); 4's split over its two
    assert run["invalid_reasons"]["codes"] == {
        "normative_prior_bias": {"count": 0.5, "share": 0.25},
        "other": {"count": 1.5, "share": 0.75},
    }
