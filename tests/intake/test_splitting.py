"""split / unsplit (annotation/intake/splitting.py): the parts, the original kept as
provenance, every refusal, and undo."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from annotation.intake.splitting import SplitRefused, original_turns, part_ranges, split, unsplit
from annotation.models import Conversation, SetAside, SplitProposal, Turn
from tests.factories import label, make_conversation, make_group, make_study

pytestmark = pytest.mark.django_db


def make_rich(study, external_id="c1", n_turns=6) -> Conversation:
    """A conversation with everything a part must carry over."""
    conversation = make_conversation(study, external_id, n_turns=n_turns)
    Conversation.objects.filter(pk=conversation.pk).update(
        source_file="chats.jsonl",
        source_line=7,
        system_prompt="You are a helpful coder.",
        preamble=[{"role": "assistant", "content": "Hi!"}],
        metadata={"model": "gpt-4", "language": "English"},
        fingerprint="abc123",
    )
    Turn.objects.filter(conversation=conversation, index=3).update(
        reply_parts=[{"kind": "tool_call", "tool": "bash", "text": "ls"}],
        reply_empty=True,
        metadata={"language": "English"},
    )
    conversation.refresh_from_db()
    return conversation


def turns_of(conversation) -> list[tuple]:
    return list(
        conversation.turns.order_by("index").values_list(
            "user_text", "reply_text", "reply_parts", "reply_empty", "reply_missing", "metadata"
        )
    )


def test_it_splits_into_parts_that_name_the_original(study, lead):
    original = make_rich(study)
    parts = split(original, [3, 5], by=lead)

    assert [p.external_id for p in parts] == ["c1#1", "c1#2", "c1#3"]
    assert [p.split_first_turn for p in parts] == [1, 3, 5]
    assert [p.n_turns for p in parts] == [2, 2, 2]
    for p in parts:
        p.refresh_from_db()
        assert p.split_from == original
        assert p.study == study
        assert (p.source_format, p.source_file, p.source_line) == ("native", "chats.jsonl", 7)
        assert p.system_prompt == "You are a helpful coder."
        assert p.metadata == {"model": "gpt-4", "language": "English"}
        assert p.set_aside == SetAside.NO
        assert p.fingerprint == ""  # a re-import finds the original, not the parts
        assert list(p.turns.values_list("index", flat=True)) == list(range(1, p.n_turns + 1))
    # the preamble came before turn 1: it stays with part 1
    assert parts[0].preamble == [{"role": "assistant", "content": "Hi!"}]
    assert parts[1].preamble == [] == parts[2].preamble
    # the turn with reply parts moved whole, as the second part's turn 1
    assert turns_of(parts[1])[0] == turns_of(original)[2]

    original.refresh_from_db()
    assert original.set_aside == SetAside.SPLIT
    assert original.n_turns == 6 and original.turns.count() == 6  # kept as provenance
    assert list(original.split_parts.order_by("split_first_turn")) == parts


def test_it_records_the_points_as_applied_proposals(study, lead):
    original = make_conversation(study, "c1", n_turns=5)
    llm = SplitProposal.objects.create(conversation=original, turn_index=3, reason="new topic")
    other = SplitProposal.objects.create(conversation=original, turn_index=5, reason="maybe")
    split(original, [2, 3], by=lead)

    llm.refresh_from_db()
    other.refresh_from_db()
    assert llm.status == SplitProposal.Status.APPLIED
    assert other.status == SplitProposal.Status.OPEN
    by_lead = SplitProposal.objects.get(conversation=original, source="lead")
    assert (by_lead.turn_index, by_lead.status) == (2, SplitProposal.Status.APPLIED)
    assert by_lead.reason == "split by lead"

    unsplit(original)
    llm.refresh_from_db()
    assert llm.status == SplitProposal.Status.OPEN
    assert not SplitProposal.objects.filter(source="lead").exists()


def test_duplicate_points_are_one_point(study):
    original = make_conversation(study, "c1", n_turns=4)
    parts = split(original, [3, 3, "3"])
    assert [p.n_turns for p in parts] == [2, 2]


@pytest.mark.parametrize("points", [[1], [0], [5], [-2], [2, 9], [], ["x"]])
def test_it_refuses_a_point_that_is_not_a_turn_from_2_to_the_last(study, points):
    original = make_conversation(study, "c1", n_turns=4)
    with pytest.raises(SplitRefused) as refused:
        split(original, points)
    message = str(refused.value)
    assert "turn" in message
    if points and points != ["x"]:
        assert "from 2 to 4" in message
    assert Conversation.objects.count() == 1
    original.refresh_from_db()
    assert original.set_aside == SetAside.NO


def test_it_refuses_an_assigned_conversation(study, alice):
    group = make_group(study, "Students A", [alice])
    original = make_conversation(study, "c1", n_turns=4, group=group)
    with pytest.raises(SplitRefused, match="c1 is assigned to group 'Students A'"):
        split(original, [2])
    assert Conversation.objects.count() == 1


def test_it_refuses_a_labelled_conversation_even_once_unassigned(study, alice):
    group = make_group(study, "g1", [alice])
    original = make_conversation(study, "c1", n_turns=4, group=group)
    label(original.turns.get(index=2), alice)
    original.assignments.all().delete()
    with pytest.raises(SplitRefused, match="c1 turn 2 has a label"):
        split(original, [3])
    assert Conversation.objects.count() == 1


def test_it_refuses_to_split_twice_or_to_split_a_part(study):
    original = make_conversation(study, "c1", n_turns=4)
    parts = split(original, [3])
    with pytest.raises(SplitRefused, match="c1 is already split"):
        split(original, [2])
    with pytest.raises(SplitRefused, match="c1#2 is a part of c1"):
        split(parts[1], [2])
    assert Conversation.objects.count() == 3


def test_it_refuses_a_conversation_set_aside_by_the_sample(study):
    original = make_conversation(study, "c1", n_turns=4)
    Conversation.objects.filter(pk=original.pk).update(set_aside=SetAside.SAMPLE)
    with pytest.raises(SplitRefused, match="not drawn by the sample"):
        split(original, [2])


def test_it_refuses_when_a_part_name_is_taken(study):
    original = make_conversation(study, "c1", n_turns=4)
    make_conversation(study, "c1#2", n_turns=1)
    with pytest.raises(SplitRefused, match="already has a conversation named c1#2"):
        split(original, [3])
    original.refresh_from_db()
    assert original.set_aside == SetAside.NO


def test_it_refuses_when_a_part_name_would_be_too_long(study):
    original = make_conversation(study, "x" * 254, n_turns=3)
    with pytest.raises(SplitRefused, match="would pass the 255 an external id may have"):
        split(original, [2])
    assert Conversation.objects.count() == 1


def test_unsplit_restores_the_original(study):
    original = make_rich(study)
    before = turns_of(original)
    split(original, [2, 4])
    assert unsplit(original) == 3
    original.refresh_from_db()
    assert original.set_aside == SetAside.NO
    assert Conversation.objects.filter(study=study).count() == 1
    assert turns_of(original) == before
    split(original, [5])  # and it can be split again, otherwise
    assert original.split_parts.count() == 2


def test_unsplit_refuses_when_a_part_is_assigned_or_labelled(study, alice):
    original = make_conversation(study, "c1", n_turns=4)
    parts = split(original, [3])
    group = make_group(study, "g1", [alice])
    Conversation.objects.filter(pk=parts[1].pk).assign(group)
    with pytest.raises(SplitRefused, match="c1#2 is assigned to group 'g1'"):
        unsplit(original)
    label(parts[1].turns.get(index=1), alice)
    parts[1].assignments.all().delete()
    with pytest.raises(SplitRefused, match="c1#2 turn 1 has a label"):
        unsplit(original)
    assert original.split_parts.count() == 2


def test_unsplit_refuses_what_is_not_split(study):
    original = make_conversation(study, "c1", n_turns=4)
    with pytest.raises(SplitRefused, match="c1 is not split"):
        unsplit(original)
    parts = split(original, [2])
    with pytest.raises(SplitRefused, match="c1#1 is a part of c1"):
        unsplit(parts[0])


def test_a_failure_midway_leaves_nothing(study, monkeypatch):
    """Atomic: an error while the parts are written leaves the original as it was."""
    original = make_conversation(study, "c1", n_turns=4)
    real = Turn.objects.bulk_create
    calls = []

    def failing(objs, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(objs, *args, **kwargs)

    monkeypatch.setattr(Turn.objects, "bulk_create", failing)
    with pytest.raises(RuntimeError):
        split(original, [2, 3])
    assert Conversation.objects.count() == 1
    original.refresh_from_db()
    assert original.set_aside == SetAside.NO


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
@given(data=st.data(), n_turns=st.integers(2, 12))
def test_the_parts_concatenated_are_the_original(db, data, n_turns):
    """For any set of split points: the parts' turns in order are the original's, each part
    starts where split_first_turn says, and undoing gives the original back."""
    points = data.draw(st.lists(st.integers(2, n_turns), min_size=1, max_size=n_turns))
    with transaction.atomic():
        study = make_study("prop")
        original = make_conversation(study, "c", n_turns=n_turns)
        parts = split(original, points)
        assert len(parts) == len(set(points)) + 1
        concatenated = [t for p in parts for t in turns_of(p)]
        assert concatenated == turns_of(original)
        assert [p.split_first_turn for p in parts] == [1, *sorted(set(points))]
        assert [(p.split_first_turn, p.split_first_turn + p.n_turns - 1) for p in parts] == (
            part_ranges(n_turns, points)
        )
        assert sum(p.n_turns for p in parts) == n_turns
        unsplit(original)
        assert Conversation.objects.filter(study=study).count() == 1
        transaction.set_rollback(True)


def test_dropped_turns_belong_to_no_part_and_stay_on_the_original(study, lead):
    """Issue 20, point 3: an off-topic turn inside a part is left out and the part's turns
    renumbered; the original keeps every turn; the drops are recorded as applied."""
    original = make_rich(study, n_turns=7)
    parts = split(original, [4], by=lead, drop_turns=[2, 6])

    assert [p.external_id for p in parts] == ["c1#1", "c1#2"]
    assert [p.split_first_turn for p in parts] == [1, 4]
    assert [p.n_turns for p in parts] == [2, 3]
    original_texts = [t[0] for t in turns_of(original)]
    assert [t[0] for t in turns_of(parts[0])] == [original_texts[0], original_texts[2]]
    assert [t[0] for t in turns_of(parts[1])] == [original_texts[i] for i in (3, 4, 6)]
    assert list(parts[1].turns.order_by("index").values_list("index", flat=True)) == [1, 2, 3]
    assert original.turns.count() == 7
    assert [original_turns(p) for p in parts] == [[1, 3], [4, 5, 7]]
    rows = SplitProposal.objects.filter(conversation=original).order_by("kind", "turn_index")
    assert [(p.kind, p.turn_index, p.status, p.source) for p in rows] == [
        ("drop", 2, "applied", "lead"),
        ("drop", 6, "applied", "lead"),
        ("split", 4, "applied", "lead"),
    ]


def test_drops_alone_make_one_part_and_a_fully_dropped_range_makes_none(study):
    a = make_conversation(study, "a", n_turns=4)
    (only,) = split(a, [], drop_turns=[1])
    assert (only.external_id, only.n_turns, only.split_first_turn) == ("a#1", 3, 2)
    b = make_conversation(study, "b", n_turns=5)
    parts = split(b, [2, 4], drop_turns=[4, 5])
    assert [(p.external_id, original_turns(p)) for p in parts] == [("b#1", [1]), ("b#2", [2, 3])]


@pytest.mark.parametrize(
    "points, drops, message",
    [
        ([], [], "No split point given"),
        ([2], [0], "Cannot drop turn 0: the conversation has turns 1 to 4"),
        ([], [5], "Cannot drop turn 5"),
        ([], [1, 2, 3, 4], "Cannot drop every turn"),
        ([], ["x"], "Dropped turn 'x' is not a turn number"),
    ],
)
def test_it_refuses_drops_out_of_range_and_dropping_everything(study, points, drops, message):
    c = make_conversation(study, "c", n_turns=4)
    with pytest.raises(SplitRefused, match=message):
        split(c, points, drop_turns=drops)
    c.refresh_from_db()
    assert c.set_aside == SetAside.NO and Conversation.objects.count() == 1


def test_undo_reopens_the_llms_drops_and_forgets_the_leads(study):
    c = make_conversation(study, "c", n_turns=4)
    SplitProposal.objects.create(conversation=c, turn_index=2, kind="drop")
    split(c, [3], drop_turns=[2, 4])
    unsplit(c)
    rows = SplitProposal.objects.filter(conversation=c).order_by("turn_index")
    assert [(p.kind, p.turn_index, p.status, p.source) for p in rows] == [
        ("drop", 2, "open", "llm"),
    ]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
@given(data=st.data(), n_turns=st.integers(1, 10))
def test_the_parts_are_the_original_without_its_dropped_turns(db, data, n_turns):
    """For any split points and dropped turns (not all): the parts' turns in order are the
    original's without the dropped ones, each part keeps a turn, original_turns maps each
    part's turns back, and undoing gives the original back."""
    points = data.draw(st.lists(st.integers(2, n_turns), max_size=n_turns)) if n_turns > 1 else []
    drops = data.draw(st.lists(st.integers(1, n_turns), max_size=n_turns))
    assume(set(drops) != set(range(1, n_turns + 1)) and (points or drops))
    with transaction.atomic():
        study = make_study("prop")
        original = make_conversation(study, "c", n_turns=n_turns)
        parts = split(original, points, drop_turns=drops)
        kept = [t for i, t in enumerate(turns_of(original), 1) if i not in set(drops)]
        assert [t for p in parts for t in turns_of(p)] == kept
        assert all(p.n_turns >= 1 for p in parts)
        mapped = [i for p in parts for i in original_turns(p)]
        assert mapped == [i for i in range(1, n_turns + 1) if i not in set(drops)]
        unsplit(original)
        assert Conversation.objects.filter(study=study).count() == 1
        transaction.set_rollback(True)
