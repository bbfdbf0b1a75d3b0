"""Group g (alice and bob, moderated by "moderator"), one conversation of four turns, and
charlie in another group with his own conversation."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_conversation, make_group

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def group(study, alice, bob, moderator):
    return make_group(study, "g", [alice, bob], moderator=moderator)


@pytest.fixture
def turns(study, group):
    """alice's (and bob's) four cards, in queue order."""
    return list(make_conversation(study, "conv-a", n_turns=4, group=group).turns.all())


@pytest.fixture
def other_group(study, charlie):
    group = make_group(study, "other", [charlie])
    make_conversation(study, "conv-c", n_turns=2, group=group)
    return group


def url(name: str, study, turn=None) -> str:
    return reverse(name, args=[study.slug] if turn is None else [study.slug, turn.pk])
