"""Two experts deciding at the same moment, on real PostgreSQL connections (one per thread,
lined up on a barrier so the calls overlap)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation.models import Kind, Proposal, ProposalDecided, Role, Study
from taxonomy.models import TaxonomyVersion
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def at_once(*calls):
    barrier = threading.Barrier(len(calls), timeout=30)
    results: list[object] = [None] * len(calls)

    def run(k: int) -> None:
        try:
            barrier.wait()
            try:
                results[k] = calls[k]()
            except Exception as e:  # the race's outcome, asserted by the test
                results[k] = e
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a racing thread hung (deadlock?)"
    return results


@pytest.fixture
def setup():
    study = make_study()
    alice = make_user("alice")
    group = make_group(study, "g1", [alice, make_user("bob")])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    lead, erin = make_user("lead"), make_user("erin")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    study.add_member(erin, Role.MODERATOR, Kind.EXPERT)
    return study, turn, alice, lead, erin


def propose(study, turn, alice, name):
    return Proposal.propose(
        study=study, turn=turn, proposer=alice, name=name, definition="d", reason="r"
    )


@pytest.mark.parametrize("_", range(5))
def test_two_decisions_on_one_proposal_one_wins(setup, _):
    study, turn, alice, lead, erin = setup
    p = propose(study, turn, alice, "Idea")
    a, b = at_once(
        lambda: Proposal.objects.get(pk=p.pk).accept(lead),
        lambda: Proposal.objects.get(pk=p.pk).reject(erin, reason="no"),
    )
    refused = [r for r in (a, b) if isinstance(r, ProposalDecided)]
    assert len(refused) == 1, (a, b)
    assert "by lead" in str(refused[0]) or "by erin" in str(refused[0])
    p.refresh_from_db()
    assert p.status in ("accepted", "rejected")
    assert TaxonomyVersion.objects.count() == (2 if p.status == "accepted" else 1)


def test_two_accepts_in_one_study_stack_their_versions(setup):
    study, turn, alice, lead, erin = setup
    p1, p2 = propose(study, turn, alice, "First"), propose(study, turn, alice, "Second")
    a, b = at_once(lambda: p1.accept(lead), lambda: p2.accept(erin))
    assert all(isinstance(r, str) for r in (a, b)), (a, b)
    version = Study.objects.get(pk=study.pk).taxonomy_version
    assert version.number == 3 and version.frozen
    # the second derived from the first's version: both types are in the study's taxonomy
    assert {"first", "second"} <= set(version.types_by_code())
