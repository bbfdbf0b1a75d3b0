"""Group A (alice and bob, moderated by "moderator") with a three-turn conversation; charlie
annotates in group B; "outsider" belongs to no study."""

from __future__ import annotations

import pytest

from tests.factories import make_conversation, make_group, make_user


@pytest.fixture
def group_a(study, alice, bob, moderator):
    return make_group(study, "A", [alice, bob], moderator=moderator)


@pytest.fixture
def turns(study, group_a):
    return list(make_conversation(study, "conv-a", n_turns=3, group=group_a).turns.all())


@pytest.fixture
def group_b(study, charlie):
    group = make_group(study, "B", [charlie])
    make_conversation(study, "conv-b", n_turns=1, group=group)
    return group


@pytest.fixture
def outsider(db):
    return make_user("outsider")
