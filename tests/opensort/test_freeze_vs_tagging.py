"""The freeze and a tag save at the same moment (issue 24, point 2): both take the study's
row lock and look again once they hold it, so one of them wins and the other is refused with
a message, never both. These are the refusals, on one connection (the freeze or the tag save
slipped into the other's window); tests/concurrency/test_open_sort_freeze_race.py races the
two for real on PostgreSQL."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, BoardType, FreeTag, Group, Phase, Study, TagSet
from annotation.opensort import board as ops
from annotation.opensort import freeze as freeze_module
from annotation.opensort import tagging
from annotation.opensort.freeze import FreezeRefused, freeze
from annotation.views.shared import tags as opensort_tags
from tests.factories import make_conversation, make_group, make_user
from tests.opensort.tag_helpers import post_tags

from .board_factories import make_open_sort, tag_card

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study):
    """alice and bob tagged cards 1 and 2; alice card 3 too, bob not yet. Every tag used is
    under the type "Smell": the board may be frozen."""
    w = make_open_sort(study, n_turns=3)
    alice, bob = w["experts"]
    t1, t2, t3 = w["turns"]
    for turn in (t1, t2):
        tag_card(turn, w["group"], alice, "vague ask")
        tag_card(turn, w["group"], bob, "unclear request")
    tag_card(t3, w["group"], alice)
    ops.create_type(study, w["lead"], "Smell")
    smell = BoardType.objects.get(study=study, name="Smell")
    for tag in FreeTag.objects.filter(study=study):
        ops.set_tag_type(study, w["lead"], tag.pk, smell.pk)
    return w


def bobs_new_tag(world, group: Group) -> TagSet:
    _, bob = world["experts"]
    return tagging.save_tag_set(
        turn=world["turns"][2],
        group=group,
        annotator=bob,
        tags=[tagging.TagInput("forgot the tests", "no test was asked for")],
    )


def assert_every_tag_set_became_a_label(study):
    for ts in TagSet.objects.filter(group__study=study):
        assert Annotation.objects.filter(
            turn=ts.turn, annotator=ts.annotator, round=1, is_current=True
        ).exists(), f"{ts.annotator}'s tag set on {ts.turn} has no round-1 label"


def test_a_tag_saved_after_the_freeze_is_refused_saying_when_it_froze(world, study):
    # the tag save read the card's group before the freeze committed (its request began
    # first); the freeze then went ahead
    group = Group.objects.select_related("study").get(pk=world["group"].pk)
    assert group.open_sorting
    result = freeze(study, world["lead"])
    with pytest.raises(tagging.TagRefused) as refused:
        bobs_new_tag(world, group)
    at = f"{result.event.created_at:%Y-%m-%d %H:%M}"
    assert str(refused.value).startswith(f"The board was frozen at {at} UTC, your tag was not")
    _, bob = world["experts"]
    assert not TagSet.objects.filter(turn=world["turns"][2], annotator=bob).exists()
    assert not FreeTag.objects.filter(name="forgot the tests").exists()
    assert_every_tag_set_became_a_label(study)


def test_the_card_says_so_when_the_freeze_came_between_the_page_and_the_save(
    client, world, study, monkeypatch
):
    _, bob = world["experts"]
    client.force_login(bob)
    read = opensort_tags.PostedTags.read

    def freeze_first(data):  # the lead's freeze lands while bob's submit is under way
        freeze(Study.objects.get(pk=study.pk), world["lead"])
        return read(data)

    monkeypatch.setattr(opensort_tags.PostedTags, "read", staticmethod(freeze_first))
    r = post_tags(client, world["turns"][2], "forgot the tests")
    html = r.content.decode()
    assert r.status_code == 409
    assert "Not saved: The board was frozen at " in html and "your tag was not saved" in html
    assert not TagSet.objects.filter(turn=world["turns"][2], annotator=bob).exists()
    assert_every_tag_set_became_a_label(study)


def test_a_freeze_that_meets_a_tag_without_a_type_is_refused_naming_it(world, study, monkeypatch):
    """The tag save landed between the freeze's check of the board and its mapping: the
    freeze is refused, naming the tag, and changes nothing."""
    real_plan = freeze_module.plan
    group = Group.objects.select_related("study").get(pk=world["group"].pk)

    def plan_then_tag(s):
        p = real_plan(s)
        bobs_new_tag(world, group)
        return p

    monkeypatch.setattr(freeze_module, "plan", plan_then_tag)
    with pytest.raises(FreezeRefused, match="'forgot the tests'") as refused:
        freeze(study, world["lead"])
    assert "has no type" in str(refused.value) and "Nothing was changed" in str(refused.value)
    study.refresh_from_db()
    assert study.phase == Phase.OPEN_SORT
    assert not Annotation.objects.exists()


def test_a_group_switched_out_of_the_open_sort_meanwhile_refuses_the_tag(world, study):
    other = make_user("carol")
    group = make_group(study, "late", [other], kind=world["group"].kind)
    turn = make_conversation(study, "c9", n_turns=1, group=group).turns.get()
    stale = Group.objects.select_related("study").get(pk=group.pk)
    tagging.set_group_phase(group, Phase.CLOSED_SORT)
    with pytest.raises(tagging.NotOpenSorting, match="late is not in the open sort"):
        tagging.save_tag_set(turn=turn, group=stale, annotator=other, tags=[tagging.TagInput("x")])
    assert not TagSet.objects.filter(annotator=other).exists()
