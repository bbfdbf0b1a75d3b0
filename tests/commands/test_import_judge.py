"""A reference annotator's labels (an LLM judge's): kept and compared with the consensus,
never voting in the group's rounds."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.agreement.data import compute_study_report
from annotation.importers.annotations import import_annotations
from annotation.models import Annotation, CardState, CardStatus, Consensus
from tests.factories import make_conversation, make_group
from tests.report.helpers import named

pytestmark = pytest.mark.django_db


def write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return str(path)


def rec(annotator, turn, labels, **extra):
    return {
        "conversation": "c1",
        "turn": turn,
        "annotator": annotator,
        "labels": labels,
        "group": "g1",
        **extra,
    }


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("import_annotations", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def card_setup(study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    make_conversation(study, "c1", n_turns=3, group=group)
    return group


def test_a_judge_never_votes_and_is_compared_with_the_gold(tmp_path, study, card_setup):
    judge_file = write(
        tmp_path / "judge.jsonl",
        [
            rec("gpt-judge", 1, ["code_rollback"]),
            rec("gpt-judge", 2, []),
            rec("gpt-judge", 3, ["code_rollback"]),
        ],
    )
    out, _ = run("s1", judge_file, "--judge", "--create-members")
    assert "3 records imported" in out
    # the judge alone moves nothing: no card left "open" because of it, none decided
    assert not CardState.objects.exclude(status=CardStatus.OPEN).exists()
    humans = write(
        tmp_path / "humans.jsonl",
        [
            rec("alice", 1, []),
            rec("bob", 1, []),  # agree, the judge did not
            rec("alice", 2, []),
            rec("bob", 2, []),
            rec("alice", 3, ["code_rollback"]),
            rec("bob", 3, []),
        ],
    )
    run("s1", humans)
    assert Consensus.objects.filter(method="unanimous").count() == 2
    assert CardState.objects.filter(status=CardStatus.DISPUTED).count() == 1
    judge = get_user_model().objects.get(username="gpt-judge")
    assert list(card_setup.judges.all()) == [judge]
    assert not card_setup.annotators.filter(pk=judge.pk).exists()
    assert Annotation.objects.filter(annotator=judge).count() == 3

    result = compute_study_report(study, n_boot=0)["axes"]["smell"]
    assert list(named(result["report"]["pairs"])) == ["alice|bob"]
    versus = result["versus_consensus"]["gpt-judge"]
    # gold exists on turns 1 and 2 (both "no smell"): the judge is right on turn 2 only
    assert (versus["n_cards"], versus["accuracy"]) == (2, 0.5)


def test_a_judge_labels_round_1_only(tmp_path, study, card_setup):
    path = write(tmp_path / "j.jsonl", [rec("gpt-judge", 1, [], round=2), rec("gpt-judge", 1, [])])
    _, err = run("s1", path, "--judge", "--create-members")
    assert f"{path}:1: round: a judge's labels are round 1 only" in err


def test_judges_and_annotators_stay_apart(tmp_path, study, card_setup):
    path = write(tmp_path / "a.jsonl", [rec("alice", 1, [])])
    report = import_annotations(study, path, create_members=True, judge=True)
    assert report.rejected == [
        f"{path}:1: annotator: 'alice' is an annotator of group 'g1', so cannot be a judge of it"
    ]
    run("s1", write(tmp_path / "j.jsonl", [rec("gpt-judge", 1, [])]), "--judge", "--create-members")
    path = write(tmp_path / "h.jsonl", [rec("gpt-judge", 2, [])])
    report = import_annotations(study, path, create_members=True)
    assert report.rejected == [
        f"{path}:1: annotator: 'gpt-judge' is a judge of group 'g1', so cannot be an annotator of it"
    ]
    assert not Annotation.objects.filter(annotator__username="gpt-judge", turn__index=2).exists()


def test_a_groups_moderator_cannot_be_its_judge(tmp_path, study, alice, bob, charlie):
    group = make_group(study, "g2", [alice, bob], moderator=charlie)
    make_conversation(study, "c2", n_turns=1, group=group)
    path = write(tmp_path / "j.jsonl", [rec("charlie", 1, [], conversation="c2", group="g2")])
    report = import_annotations(study, path, create_members=True, judge=True)
    assert report.rejected == [
        f"{path}:1: annotator: 'charlie' is the moderator of group 'g2', so cannot be a judge of it"
    ]
    assert not group.judges.exists()
