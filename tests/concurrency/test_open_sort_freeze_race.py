"""The open sort's freeze and an expert's tag save at the same moment, on real PostgreSQL
connections (issue 24, point 2): both take the study's row lock and look again once they hold
it, so one wins and the other is refused, whatever the ordering. Run on 20 studies at once
(one race each), with the tag save's group read before the race as a request reads it first:
no tag set may be left without its round-1 label after a freeze that went ahead."""

from __future__ import annotations

import pytest

from annotation.models import (
    Annotation,
    BoardType,
    FreeTag,
    Group,
    Kind,
    Phase,
    Role,
    Study,
    TagSet,
)
from annotation.opensort import board as ops
from annotation.opensort import tagging
from annotation.opensort.freeze import FreezeRefused, FreezeResult, freeze
from tests.concurrency.test_concurrent_decisions import race
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N_STUDIES = 20
NEW_TAG = "forgot the tests"


def _tag(turn, group, user, *names) -> None:
    tag_set = TagSet.objects.create(turn=turn, group=group, annotator=user)
    study = group.study
    tag_set.tags.set(
        [FreeTag.objects.get_or_create(study=study, author=user, name=n)[0] for n in names]
    )


@pytest.fixture
def boards():
    """N_STUDIES open sorts ready to freeze: alice and bob tagged cards 1 and 2 (bob's card 2:
    no smell), alice card 3, bob not yet; every tag used is under the type "Smell"."""
    alice, bob, lead = make_user("alice"), make_user("bob"), make_user("lead")
    out = []
    for i in range(N_STUDIES):
        study = make_study(f"s{i}")
        Study.objects.filter(pk=study.pk).update(phase=Phase.OPEN_SORT)
        study.refresh_from_db()
        study.add_member(lead, Role.LEAD, Kind.EXPERT)
        group = make_group(study, "experts", [alice, bob], kind=Kind.EXPERT)
        turns = list(make_conversation(study, "c1", n_turns=3, group=group).turns.order_by("index"))
        _tag(turns[0], group, alice, "vague ask")
        _tag(turns[0], group, bob, "unclear request")
        _tag(turns[1], group, alice)
        _tag(turns[1], group, bob)
        _tag(turns[2], group, alice, "vague ask")
        ops.create_type(study, lead, "Smell")
        smell = BoardType.objects.get(study=study)
        for tag in FreeTag.objects.filter(study=study):
            ops.set_tag_type(study, lead, tag.pk, smell.pk)
        # the tag save's request read the card's group before the race
        stale = Group.objects.select_related("study").get(pk=group.pk)
        out.append({"study": study, "group": stale, "turns": turns})
    return {"alice": alice, "bob": bob, "lead": lead, "boards": out}


def assert_consistent(board, frozen, saved) -> None:
    """Exactly one of the two went ahead, the other was refused with its message, and the
    database says the same."""
    study = Study.objects.get(pk=board["study"].pk)
    outcomes = (frozen, saved)
    if isinstance(frozen, FreezeResult):
        assert isinstance(saved, tagging.TagRefused), outcomes
        assert str(saved).startswith("The board was frozen at "), outcomes
        assert "your tag was not saved" in str(saved), outcomes
        assert not FreeTag.objects.filter(study=study, name=NEW_TAG).exists()
        assert study.phase == Phase.CLOSED_SORT
    else:
        assert isinstance(frozen, FreezeRefused), outcomes
        assert isinstance(saved, TagSet), outcomes
        assert repr(NEW_TAG) in str(frozen) and "no type" in str(frozen), outcomes
        assert study.phase == Phase.OPEN_SORT
        assert not Annotation.objects.filter(turn__conversation__study=study).exists()
        return
    # after a freeze: every tag set is its author's round-1 label, through the one mapping
    tag_sets = TagSet.objects.filter(group__study=study).prefetch_related("tags")
    for ts in tag_sets:
        label = Annotation.objects.get(
            turn=ts.turn, annotator=ts.annotator, round=1, is_current=True
        )
        assert label.codes == ({"smell"} if ts.tags.exists() else set()), ts


@pytest.mark.parametrize("card", [2, 1], ids=["new tag set", "changed tag set"])
def test_a_freeze_and_a_tag_save_never_both_go_ahead(boards, card):
    lead, bob = boards["lead"], boards["bob"]

    def freeze_board(i: int):
        return freeze(boards["boards"][i]["study"], lead)

    def save_tag(i: int):
        board = boards["boards"][i]
        return tagging.save_tag_set(
            turn=board["turns"][card],
            group=board["group"],
            annotator=bob,
            tags=[tagging.TagInput(NEW_TAG, "no test was asked for")],
        )

    frozen, saved = race(freeze_board, save_tag, n=N_STUDIES)

    wrong = []
    for board, f, s in zip(boards["boards"], frozen, saved, strict=True):
        try:
            assert_consistent(board, f, s)
        except AssertionError as e:
            wrong.append(f"{board['study'].slug}: {e}")
    assert not wrong, f"{len(wrong)} of {N_STUDIES} races inconsistent:\n" + "\n".join(wrong)
