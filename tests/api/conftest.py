"""The API tests' cards: two groups, three and two cards."""

from __future__ import annotations

import pytest

from tests.factories import make_conversation, make_group, make_user


@pytest.fixture
def cards_setup(study, alice, bob):
    """Alice and Bob annotate c1 (group g1); Dora alone annotates c2 (group g2)."""
    g1 = make_group(study, "g1", annotators=[alice, bob])
    g2 = make_group(study, "g2", annotators=[make_user("dora")])
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    c2 = make_conversation(study, "c2", n_turns=2, group=g2)
    return g1, c1, c2
