"""A study with group A (alice and bob, moderated by "moderator") and group B (charlie and
dora, moderated by "mod-b"), one three-turn conversation each."""

from __future__ import annotations

import pytest

from tests.factories import label, make_conversation, make_group, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dora(db):
    return make_user("dora")


@pytest.fixture
def group_a(study, alice, bob, moderator):
    return make_group(study, "A", [alice, bob], moderator=moderator)


@pytest.fixture
def group_b(study, charlie, dora):
    return make_group(study, "B", [charlie, dora], moderator=make_user("mod-b"))


@pytest.fixture
def turns_a(study, group_a):
    return list(make_conversation(study, "conv-a", n_turns=3, group=group_a).turns.all())


@pytest.fixture
def turns_b(study, group_b):
    return list(make_conversation(study, "conv-b", n_turns=3, group=group_b).turns.all())


@pytest.fixture
def disputed(turns_a, alice, bob):
    """Group A's second turn after round 1: alice and bob differ, so round 2 is open."""
    turn = turns_a[1]
    label(turn, alice, "ambiguous_instruction", note="alice-round-1-note")
    label(turn, bob, "must_do_omission", note="bob-round-1-note")
    return turn
