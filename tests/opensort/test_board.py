"""The consolidation board's domain (annotation/opensort/board.py): what it shows, each
operation, undo and redo, the history, and two editors at once."""

from __future__ import annotations

import pytest

from annotation.models import BoardEvent, BoardType, FreeTag
from annotation.opensort import board as ops
from annotation.opensort import reading
from annotation.opensort.board import BoardConflict, BoardError, BoardFrozen

from .board_factories import make_open_sort, make_tag, tag_card, tag_six_cards

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study):
    w = make_open_sort(study)
    tag_six_cards(w)
    return w


def tag(study, name: str) -> FreeTag:
    return FreeTag.objects.get(study=study, name=name)


def shown(study) -> dict[str, reading.BoardTag]:
    return {t.label: t for t in reading.load_board(study).tags}


def test_it_lists_every_tag_with_its_uses_authors_and_example_cards(study, world):
    tags = shown(study)
    assert set(tags) == {"vague ask", "unclear request", "ignored rule", "broke constraint"}
    assert tags["broke constraint"].uses == 4
    assert tags["broke constraint"].authors == ["bob"]
    assert tags["vague ask"].uses == 3
    turns = world["turns"]
    assert [t.pk for t in tags["vague ask"].examples] == [turns[0].pk, turns[2].pk, turns[4].pk]


def test_a_rename_changes_the_board_name_and_keeps_the_authors(study, world):
    event = ops.rename_tag(study, world["lead"], tag(study, "vague ask").pk, "Ambiguous ask")
    t = tag(study, "vague ask")
    assert (t.name, t.board_name) == ("vague ask", "Ambiguous ask")
    assert "Ambiguous ask" in shown(study)
    assert event.summary == "Renamed tag 'vague ask' to 'Ambiguous ask'"
    assert event.actor == world["lead"]


def test_a_rename_from_a_stale_page_is_refused(study, world):
    pk = tag(study, "vague ask").pk
    ops.rename_tag(study, world["lead"], pk, "Ambiguous ask", was="")
    with pytest.raises(BoardConflict, match="renamed the tag 'vague ask' to 'Ambiguous ask'"):
        ops.rename_tag(study, world["experts"][0], pk, "Vague", was="")
    assert tag(study, "vague ask").board_name == "Ambiguous ask"


def test_a_merge_counts_the_uses_once_per_card_and_follows_the_targets_type(study, world):
    lead = world["lead"]
    bt = ops.create_type(study, lead, "Ambiguous instruction", "Intent").after
    type_id = int(next(iter(bt["types"])))
    target = tag(study, "unclear request")
    ops.set_tag_type(study, lead, target.pk, type_id)
    ops.merge_tags(study, lead, [tag(study, "vague ask").pk], target.pk)
    tags = shown(study)
    assert "vague ask" not in tags
    # cards 1, 3, 5 by alice, 1, 3 by bob: three cards
    assert tags["unclear request"].uses == 3
    assert tags["unclear request"].authors == ["alice", "bob"]
    assert reading.tag_type_map(study)[tag(study, "vague ask").pk] == type_id


def test_merge_chains_end_at_one_tag(study, world):
    lead = world["lead"]
    a, b, c = (tag(study, n).pk for n in ("vague ask", "unclear request", "ignored rule"))
    ops.merge_tags(study, lead, [a], b)
    ops.merge_tags(study, lead, [b], c)
    assert FreeTag.objects.get(pk=a).merged_into_id == c
    assert FreeTag.objects.get(pk=b).merged_into_id == c
    # merging into a merged tag merges into the end of its chain
    d = tag(study, "broke constraint").pk
    ops.merge_tags(study, lead, [d], a)
    assert FreeTag.objects.get(pk=d).merged_into_id == c
    with pytest.raises(BoardError, match="Nothing to merge"):
        ops.merge_tags(study, lead, [a], c)


def test_a_tag_taken_out_of_a_merge_stands_alone(study, world):
    lead = world["lead"]
    a, b = tag(study, "vague ask").pk, tag(study, "unclear request").pk
    ops.merge_tags(study, lead, [a], b)
    ops.unmerge_tag(study, lead, a)
    assert FreeTag.objects.get(pk=a).merged_into_id is None
    assert shown(study)["vague ask"].uses == 3


def test_types_are_created_edited_reordered_and_deleted(study, world):
    lead = world["lead"]
    ops.create_type(study, lead, "First", "Cat")
    ops.create_type(study, lead, "Second", "Cat", definition="d2")
    first, second = BoardType.objects.order_by("pk")
    assert (first.order, second.order) == (0, 1)
    with pytest.raises(BoardError, match="already on the board"):
        ops.create_type(study, lead, "first", "Other")
    ops.move_type(study, lead, second.pk, "up")
    assert list(BoardType.objects.order_by("order").values_list("name", flat=True)) == [
        "Second",
        "First",
    ]
    with pytest.raises(BoardError, match="already the first"):
        ops.move_type(study, lead, second.pk, "up")
    ops.update_type(study, lead, first.pk, definition="what it means", example="an example")
    first.refresh_from_db()
    assert (first.definition, first.example) == ("what it means", "an example")
    ops.rename_category(study, lead, "Cat", "Intent")
    assert set(BoardType.objects.values_list("category", flat=True)) == {"Intent"}
    ops.set_tag_type(study, lead, tag(study, "vague ask").pk, first.pk)
    ops.delete_type(study, lead, first.pk)
    assert not BoardType.objects.filter(pk=first.pk).exists()
    assert tag(study, "vague ask").board_type_id is None


def test_bad_input_is_refused_with_what_and_where(study, world):
    lead = world["lead"]
    with pytest.raises(BoardError, match="Type name: required"):
        ops.create_type(study, lead, "  ")
    with pytest.raises(BoardError, match="Tag name: at most 100 characters"):
        ops.rename_tag(study, lead, tag(study, "vague ask").pk, "x" * 101)
    with pytest.raises(BoardError, match="No type '999999'"):
        ops.set_tag_type(study, lead, tag(study, "vague ask").pk, "999999")
    with pytest.raises(BoardError, match="No tag 'abc'"):
        ops.rename_tag(study, lead, "abc", "x")
    assert not BoardEvent.objects.exists()


def test_undo_reverts_the_newest_change_and_redo_applies_it_again(study, world):
    lead = world["lead"]
    start = ops.snapshot(study)
    ops.create_type(study, lead, "Ambiguous", "Intent")
    after_create = ops.snapshot(study)
    bt = BoardType.objects.get()
    ops.set_tag_type(study, lead, tag(study, "vague ask").pk, bt.pk)
    ops.delete_type(study, lead, bt.pk)
    assert ops.undo(study, lead).action == "delete_type"
    # the type is back with its id, and its tag under it
    assert tag(study, "vague ask").board_type_id == bt.pk
    ops.undo(study, lead)
    assert ops.snapshot(study) == after_create
    ops.undo(study, lead)
    assert ops.snapshot(study) == start
    with pytest.raises(BoardError, match="Nothing to undo"):
        ops.undo(study, lead)
    assert ops.redo(study, lead).action == "create_type"
    assert ops.snapshot(study) == after_create
    assert BoardType.objects.get().pk == bt.pk


def test_a_new_change_after_an_undo_ends_what_can_be_redone(study, world):
    lead = world["lead"]
    ops.create_type(study, lead, "A")
    ops.undo(study, lead)
    assert reading.redo_candidate(study) is not None
    ops.create_type(study, lead, "B")
    assert reading.redo_candidate(study) is None
    with pytest.raises(BoardError, match="Nothing to redo"):
        ops.redo(study, lead)


def test_the_history_lists_every_change_newest_first_with_who_and_whether_undone(study, world):
    alice = world["experts"][0]
    ops.create_type(study, world["lead"], "A")
    ops.create_type(study, alice, "B")
    ops.undo(study, alice)
    history = reading.load_board(study).history
    assert [(e.summary, e.actor.username, e.undone) for e in history] == [
        ("Created type 'B'", "alice", True),
        ("Created type 'A'", "lead", False),
    ]


def test_a_stale_undo_is_refused_with_the_reason(study, world):
    """alice's page offers to undo her change; bob changed the board since: undoing would
    revert bob's change, so it is refused and nothing moves."""
    alice, bob = world["experts"]
    mine = ops.create_type(study, alice, "A")
    ops.create_type(study, bob, "B")
    before = ops.snapshot(study)
    with pytest.raises(BoardConflict, match="is now \"Created type 'B'\" by bob"):
        ops.undo(study, alice, event_id=mine.pk)
    assert ops.snapshot(study) == before


def test_two_editors_of_one_type_keep_each_others_changes(study, world):
    """Both pages drawn before either saves: alice writes the definition, bob the name."""
    alice, bob = world["experts"]
    ops.create_type(study, world["lead"], "Vague", "Intent", definition="old")
    bt = BoardType.objects.get()
    page = {"name": "Vague", "category": "Intent", "definition": "old", "example": ""}
    ops.update_type(study, alice, bt.pk, was=page, **{**page, "definition": "new definition"})
    ops.update_type(study, bob, bt.pk, was=page, **{**page, "name": "Ambiguous"})
    bt.refresh_from_db()
    assert (bt.name, bt.definition) == ("Ambiguous", "new definition")
    # the same field from a stale page: refused, naming what is there now
    with pytest.raises(BoardConflict, match="the name of type 'Ambiguous' since: it is now"):
        ops.update_type(study, alice, bt.pk, was=page, **{**page, "name": "Unclear"})


def test_a_frozen_board_refuses_every_change(study, world):
    BoardEvent.objects.create(study=study, action=reading.FREEZE, summary="Froze")
    with pytest.raises(BoardFrozen):
        ops.create_type(study, world["lead"], "A")
    assert reading.undo_candidate(study) is None


def test_a_merge_into_another_authors_tag_moves_the_tags_merged_into_it(study, world):
    lead = world["lead"]
    alice = world["experts"][0]
    extra = make_tag(study, alice, "unclear goal")
    tag_card(world["turns"][3], world["group"], alice, "unclear goal")
    a, b = tag(study, "vague ask").pk, tag(study, "unclear request").pk
    ops.merge_tags(study, lead, [extra.pk], a)
    ops.merge_tags(study, lead, [a], b)
    assert FreeTag.objects.get(pk=extra.pk).merged_into_id == b
    assert shown(study)["unclear request"].uses == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_editors_never_lose_a_change(study):
    """Eight editors at once, each putting a different tag under a type: every change lands
    and the history has one event each (the study row lock runs them one at a time)."""
    import threading

    from django.db import connection

    w = make_open_sort(study)
    alice = w["experts"][0]
    tags = [make_tag(study, alice, f"t{i}") for i in range(8)]
    ops.create_type(study, w["lead"], "T")
    bt = BoardType.objects.get()
    errors = []

    def put(pk):
        try:
            ops.set_tag_type(study, w["lead"], pk, bt.pk)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            connection.close()

    threads = [threading.Thread(target=put, args=(t.pk,)) for t in tags]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert FreeTag.objects.filter(board_type=bt).count() == 8
    assert BoardEvent.objects.filter(action="set_type").count() == 8
