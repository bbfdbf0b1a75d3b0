"""Two groups sharing a conversation, for the overlapping-groups tests."""

from __future__ import annotations

import pytest

from annotation.models import Conversation
from tests.factories import make_conversation, make_group, make_user


def types(study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    return [by_code[c] for c in codes]


@pytest.fixture
def shared(study, alice, bob):
    """Group A (alice, bob) and group B (carol, dave) share conversation c1."""
    carol, dave = make_user("carol"), make_user("dave")
    a = make_group(study, "A", [alice, bob])
    b = make_group(study, "B", [carol, dave])
    conversation = make_conversation(study, "c1", n_turns=1, group=a)
    Conversation.objects.filter(pk=conversation.pk).assign(b)
    return a, b, carol, dave, conversation.turns.get()
