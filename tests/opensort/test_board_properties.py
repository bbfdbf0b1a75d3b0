"""Properties of the board's operations over any sequence of them (hypothesis): undoing every
change restores the board it started from, and a merge chain always ends at one tag, whose type
every tag merged into it counts under."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import BoardType, FreeTag
from annotation.opensort import board as ops
from annotation.opensort import reading
from annotation.opensort.board import BoardError
from tests.factories import make_study

from .board_factories import make_open_sort, make_tag, tag_card

pytestmark = pytest.mark.django_db

N_TAGS = 5
index = st.integers(min_value=0, max_value=9)
step = st.one_of(
    st.tuples(st.just("rename"), index, st.sampled_from(["", "A", "B", "vague"])),
    st.tuples(st.just("merge"), index, index),
    st.tuples(st.just("unmerge"), index),
    st.tuples(st.just("set_type"), index, index),
    st.tuples(st.just("untype"), index),
    st.tuples(
        st.just("create_type"),
        st.sampled_from(["X", "Y", "Z", "W"]),
        st.sampled_from(["", "C1", "C2"]),
    ),
    st.tuples(st.just("update_type"), index, st.sampled_from(["def 1", "def 2"])),
    st.tuples(st.just("delete_type"), index),
    st.tuples(
        st.just("rename_category"),
        st.sampled_from(["", "C1", "C2"]),
        st.sampled_from(["", "C1", "C3"]),
    ),
    st.tuples(st.just("move_type"), index, st.sampled_from(["up", "down"])),
    st.tuples(st.just("undo")),
    st.tuples(st.just("redo")),
)


def _apply(study, user, tags: list[int], op: tuple) -> None:
    types = list(BoardType.objects.filter(study=study).order_by("pk").values_list("pk", flat=True))

    def a_type(i):
        return types[i % len(types)] if types else 0

    name, *args = op
    calls = {
        "rename": lambda: ops.rename_tag(study, user, tags[args[0] % N_TAGS], args[1]),
        "merge": lambda: ops.merge_tags(
            study, user, [tags[args[0] % N_TAGS]], tags[args[1] % N_TAGS]
        ),
        "unmerge": lambda: ops.unmerge_tag(study, user, tags[args[0] % N_TAGS]),
        "set_type": lambda: ops.set_tag_type(study, user, tags[args[0] % N_TAGS], a_type(args[1])),
        "untype": lambda: ops.set_tag_type(study, user, tags[args[0] % N_TAGS], None),
        "create_type": lambda: ops.create_type(study, user, args[0], args[1]),
        "update_type": lambda: ops.update_type(study, user, a_type(args[0]), definition=args[1]),
        "delete_type": lambda: ops.delete_type(study, user, a_type(args[0])),
        "rename_category": lambda: ops.rename_category(study, user, args[0], args[1]),
        "move_type": lambda: ops.move_type(study, user, a_type(args[0]), args[1]),
        "undo": lambda: ops.undo(study, user),
        "redo": lambda: ops.redo(study, user),
    }
    try:
        calls[name]()
    except BoardError:
        pass  # refused: nothing changed (checked by the final comparison too)


def _check_chains(study) -> None:
    rows = {t.pk: t for t in FreeTag.objects.filter(study=study)}
    types = reading.tag_type_map(study)
    for t in rows.values():
        if t.merged_into_id is not None:
            target = rows[t.merged_into_id]
            assert target.merged_into_id is None, f"{t} -> {target} -> {target.merged_into_id}"
            assert types[t.pk] == target.board_type_id


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, max_size=14))
def test_undoing_every_change_restores_the_start_and_chains_end_at_one_tag(db, steps):
    with transaction.atomic():
        study = make_study("prop")
        world = make_open_sort(study, n_turns=3)
        alice, bob = world["experts"]
        tags = [make_tag(study, alice if i % 2 else bob, f"tag{i}").pk for i in range(N_TAGS)]
        for i, turn in enumerate(world["turns"]):
            tag_card(turn, world["group"], alice, f"tag{2 * i % N_TAGS}")
        start = ops.snapshot(study)
        for op in steps:
            _apply(study, world["lead"], tags, op)
            _check_chains(study)
        while reading.undo_candidate(study) is not None:
            ops.undo(study, world["lead"])
        assert ops.snapshot(study) == start
        transaction.set_rollback(True)
