"""import_annotations with episode records (people's judgements of episodes) and coverage
ratings, beside card records in the same file."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.importers.episodes import import_episodes
from annotation.models import (
    Annotation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    Group,
    Unit,
)
from tests.factories import make_group, make_user

from .conftest import episode, write_jsonl


@pytest.fixture
def episodes(agents, tmp_path):
    records = [episode(first=1, last=2), episode(first=2, last=4), episode("s2", 1, 1)]
    import_episodes(agents, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    return list(Episode.objects.order_by("conversation_id", "first_turn"))


def load(tmp_path, records, *args):
    out, err = StringIO(), StringIO()
    path = write_jsonl(tmp_path / "people.jsonl", records)
    call_command("import_annotations", "ag", path, *args, stdout=out, stderr=err)
    return path, out.getvalue(), err.getvalue()


def judged(e, who, valid=True, **extra):
    return {"episode": e.pk, "run": "gpt", "annotator": who, "group": "E1", "valid": valid} | extra


def test_judgements_by_id_and_by_range_land_in_a_new_episode_group(agents, episodes, tmp_path):
    a, b, c = episodes
    by_range = {"conversation": "s1", "first_turn": 2, "last_turn": 4, "run": "gpt",
                "annotator": "ann", "group": "E1", "valid": False,
                "invalid_reason": "observational_blind_spot.invisible_agent_action"}  # fmt: skip
    records = [
        judged(a, "ann", labels={"symptom": ["scope_overreach"], "cause": []}),
        by_range,
        {"conversation": "s1", "annotator": "ann", "group": "E1", "coverage": 2},
    ]
    _, out, err = load(tmp_path, records, "--create-members", "--kind", "expert")
    assert err == "" and "3 records imported, 0 rejected" in out
    group = Group.objects.get(study=agents, name="E1")
    assert group.unit == Unit.EPISODE and group.kind == "expert"
    first = EpisodeJudgement.objects.get(episode=a)
    assert first.valid and first.labels == {"symptom": ["scope_overreach"]} and first.round == 1
    second = EpisodeJudgement.objects.get(episode=b)
    assert not second.valid
    assert second.invalid_reason == "observational_blind_spot.invisible_agent_action"
    rating = CoverageRating.objects.get()
    assert (rating.rating, rating.annotator.username, rating.group) == (2, "ann", group)
    assert group.conversations.filter(external_id="s1").exists()


def test_card_records_still_go_to_the_label_import_beside_episode_records(
    agents, episodes, tmp_path
):
    make_group(agents, "T1", annotators=[make_user("carl")])
    card = {"conversation": "s2", "turn": 1, "annotator": "carl", "group": "T1",
            "labels": ["scope_overreach"]}  # fmt: skip
    _, out, err = load(tmp_path, [card, judged(episodes[0], "ann")], "--create-members")
    assert "2 records imported" in out, err
    assert Annotation.objects.get().annotator.username == "carl"
    assert EpisodeJudgement.objects.get().annotator.username == "ann"


def test_an_existing_group_of_turns_refuses_episode_judgements(agents, episodes, tmp_path):
    make_group(agents, "E1", annotators=[make_user("ann")])
    with pytest.raises(CommandError, match="nothing could be imported"):
        load(tmp_path, [judged(episodes[0], "ann")])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"valid": "yes"}, "valid: must be true or false"),
        ({"episode": 999999}, "episode: no episode 999999"),
        ({"run": "other"}, "run: episode"),
        ({"valid": False, "labels": {"symptom": ["scope_overreach"]}}, "labels: given for an"),
        ({"valid": False, "invalid_reason": "lazy"}, "invalid_reason: unknown reason 'lazy'"),
        ({"labels": {"damage_severity": ["DS1", "DS2"]}}, "labels.damage_severity: at most 1"),
        ({"labels": {"damage_severity": ["DS1"], "damage_locus": ["project"]}},
         "labels.damage_locus: Damage locus: only when Damage severity is DS2 or DS3"),
        ({"labels": {"resolver": ["RV2"]}},
         "labels.resolver: Resolver: only when Resolution status is visible"),
        ({"round": 0}, "round: must be a positive integer"),
        ({"coverage": 3}, "coverage: must be 0, 1 or 2"),
    ],
)  # fmt: skip
def test_a_bad_record_is_named_and_skipped(agents, episodes, tmp_path, change, message):
    good = judged(episodes[1], "ann")
    bad = judged(episodes[0], "ann") | change
    if "coverage" in change:
        bad = {"conversation": "s1", "annotator": "ann", "group": "E1"} | change
    path, out, err = load(tmp_path, [good, bad], "--create-members")
    assert f"{path}:2: {message}" in err
    assert "1 records imported, 1 rejected" in out


def test_round_rules_mirror_the_cards(agents, episodes, tmp_path):
    a, b, _ = episodes
    group = make_group(agents, "E1", annotators=[make_user("ann"), make_user("bob")])
    Group.objects.filter(pk=group.pk).update(unit=Unit.EPISODE)
    records = [
        judged(a, "ann"),
        judged(a, "ann", valid=False, invalid_reason="other"),  # a revision: round 1 open
        judged(a, "bob"),  # round 1 closes in disagreement: round 2 opens
        judged(a, "bob", valid=False, invalid_reason="other"),  # too late for round 1
        judged(a, "ann", round=2),
        judged(a, "bob", round=2),  # round 2 agrees
        judged(a, "ann", round=3),  # no round 3: agreed
        judged(b, "ann", round=2),  # round 2 not open: round 1 under way
        judged(b, "ann"),
        judged(b, "ann"),  # the same again: nothing changes
    ]
    path, out, err = load(tmp_path, records)
    assert f"{path}:4: round: This episode has left round 1" in err
    assert f"{path}:7: round: Round 3 is not open" in err
    assert f"{path}:8: round: Round 2 is not open" in err
    assert "7 records imported, 3 rejected" in out
    ann_a = EpisodeJudgement.objects.filter(episode=a, annotator__username="ann", round=1)
    assert [(j.valid, j.is_current) for j in ann_a.order_by("id")] == [(True, False), (False, True)]
    assert EpisodeJudgement.objects.filter(episode=a, round=2).count() == 2
    assert EpisodeJudgement.objects.filter(episode=b).count() == 1


def test_importing_the_file_again_duplicates_nothing(agents, episodes, tmp_path):
    records = [
        judged(episodes[0], "ann"),
        {"conversation": "s1", "annotator": "ann", "group": "E1", "coverage": 1},
    ]
    load(tmp_path, records, "--create-members")
    load(tmp_path, records, "--create-members")
    assert EpisodeJudgement.objects.count() == 1 and CoverageRating.objects.count() == 1
    load(tmp_path, [records[1] | {"coverage": 2}], "--create-members")
    ratings = CoverageRating.objects.order_by("id")
    assert [(r.rating, r.is_current) for r in ratings] == [(1, False), (2, True)]


def test_a_judges_judgements_are_kept_but_never_vote(agents, episodes, tmp_path):
    from annotation.episodes.report import episode_measures

    a = episodes[0]
    group = make_group(agents, "E1", annotators=[make_user("ann")])
    Group.objects.filter(pk=group.pk).update(unit=Unit.EPISODE)
    load(tmp_path, [judged(a, "llm", valid=False, invalid_reason="other")], "--judge",
         "--create-members")  # fmt: skip
    assert group.judges.filter(username="llm").exists()
    _, out, err = load(tmp_path, [judged(a, "ann")])
    assert "1 records imported, 0 rejected" in out, err
    gpt = episode_measures(agents)["overall"]["runs"]["gpt"]
    assert (gpt["valid"], gpt["invalid"]) == (1, 0)  # the judge's "invalid" is not a vote
