"""A batched label import ends exactly where submitting its records one by one ends: the same
revisions, card states, consensus and refused records, whatever the file and batch size."""

from __future__ import annotations

import json
from unittest.mock import patch

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.importers import label_batch
from annotation.importers.annotations import import_annotations
from annotation.models import Annotation, CardState, Consensus, RoundClosed, Source
from tests.factories import make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

CODES = ["ambiguous_instruction", "incomplete_instruction", "code_rollback"]
PEOPLE = ["alice", "bob", "carol"]

# few cards, people and codes, so that cards do fill up, disagree and move on
records = st.lists(
    st.fixed_dictionaries(
        {
            "turn": st.integers(1, 2),
            "annotator": st.sampled_from(PEOPLE),
            "labels": st.lists(st.sampled_from(CODES[:2]), max_size=1),
            "round": st.sampled_from([1, 1, 2, 2, 3]),
            "note": st.sampled_from(["", "", "why"]),
        }
    ),
    min_size=10,
    max_size=40,
)


class _Rollback(Exception):
    pass


def _setup(study, n_annotators: int, discussion_rounds: int):
    study.discussion_rounds = discussion_rounds
    study.save(update_fields=["discussion_rounds"])
    people = [make_user(u) for u in PEOPLE[:n_annotators]]
    group = make_group(study, "g1", annotators=people)
    conversation = make_conversation(study, "c1", n_turns=3, group=group)
    return group, {t.index: t for t in conversation.turns.all()}


def _snapshot() -> dict:
    """What a user can see of the outcome, in creation order (ids differ between runs)."""
    annotations = [
        (a.turn.index, a.annotator.username, a.round, sorted(a.codes), a.note, a.is_current)
        for a in Annotation.objects.order_by("id").select_related("turn", "annotator")
    ]
    states = sorted(
        (s.turn.index, s.status, s.round) for s in CardState.objects.select_related("turn")
    )
    consensus = [
        (c.turn.index, c.method, c.from_round, sorted(c.codes), c.is_current)
        for c in Consensus.objects.order_by("id").select_related("turn")
    ]
    return {"annotations": annotations, "states": states, "consensus": consensus}


def _one_by_one(study, lines: list[dict], n_annotators: int, rounds: int) -> dict:
    group, turns = _setup(study, n_annotators, rounds)
    by_code = study.taxonomy_version.types_by_code()
    users = {u: make_user(u) for u in PEOPLE}
    refused = []
    for number, line in enumerate(lines, start=1):
        if line["annotator"] not in PEOPLE[:n_annotators]:
            continue  # not seated: refused before any rule, by both paths
        try:
            Annotation.submit(
                turn=turns[line["turn"]],
                group=group,
                annotator=users[line["annotator"]],
                round=line["round"],
                types=[by_code[c] for c in line["labels"]],
                note=line["note"],
                source=Source.IMPORT,
            )
        except RoundClosed as e:
            refused.append(f"{number}: round: {e}")
    return {**_snapshot(), "refused": refused}


def _batched(study, lines, n_annotators, rounds, batch_size, tmp_path) -> dict:
    _setup(study, n_annotators, rounds)
    path = tmp_path / "labels.jsonl"
    with path.open("w") as f:
        for line in lines:
            f.write(json.dumps({"conversation": "c1", "group": "g1", **line}) + "\n")
    report = import_annotations(study, path, batch_size=batch_size)
    refused = [r.removeprefix(f"{path}:") for r in report.rejected if ": round: " in r]
    return {**_snapshot(), "refused": refused}


def _in_rollback(run, *args) -> dict:
    """Run in a transaction that is then undone, so both runs start from the same rows."""
    out = {}
    try:
        with transaction.atomic():
            out = run(*args)
            raise _Rollback
    except _Rollback:
        pass
    return out


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=records,
    n_annotators=st.integers(2, 3),
    rounds=st.integers(1, 2),
    batch_size=st.integers(1, 7),
    attempts=st.sampled_from([1, label_batch.ATTEMPTS]),
)
@pytest.mark.slow
def test_a_batched_import_equals_submitting_one_by_one(
    study, tmp_path, lines, n_annotators, rounds, batch_size, attempts
):
    """Both ways a batch meets the cards it creates: played as fresh cards and inserted with
    their outcome, or (a batch's last attempt) inserted first and locked like stored ones."""
    expected = _in_rollback(_one_by_one, study, lines, n_annotators, rounds)
    with patch.object(label_batch, "ATTEMPTS", attempts):
        got = _in_rollback(_batched, study, lines, n_annotators, rounds, batch_size, tmp_path)
    assert got == expected


def test_a_refused_record_keeps_its_batch_neighbours(tmp_path, study, alice, bob):
    _, turns = _setup(study, 2, 1)
    path = tmp_path / "a.jsonl"
    lines = [
        {"turn": 1, "annotator": "alice", "labels": []},
        {"turn": 1, "annotator": "bob", "labels": []},  # round 1 of turn 1 closes here
        {"turn": 1, "annotator": "alice", "labels": ["code_rollback"]},  # refused
        {"turn": 2, "annotator": "alice", "labels": ["code_rollback"]},
    ]
    path.write_text(
        "".join(json.dumps({"conversation": "c1", "group": "g1", **x}) + "\n" for x in lines)
    )

    report = import_annotations(study, path, batch_size=100)

    assert report.imported == 3
    assert report.rejected == [
        f"{path}:3: round: This card has left round 1: every annotator of its group has "
        "labelled it, so round-1 labels can no longer change."
    ]
    assert turns[1].states.get().status == "agreed"
    assert Annotation.objects.filter(turn=turns[2], annotator=alice).exists()


def test_a_batch_costs_about_the_same_queries_for_10_or_200_records(tmp_path, study):
    """One transaction and one state computation a batch, not a few queries a record (only
    SQLite's cap on parameters a statement splits a bulk insert in a few more)."""

    def queries(n_conversations: int) -> int:
        people = [make_user(u) for u in ("alice", "bob")]
        group = make_group(study, f"g{n_conversations}", annotators=people)
        path = tmp_path / f"{n_conversations}.jsonl"
        with path.open("w") as f:
            for c in range(n_conversations):
                make_conversation(study, f"n{n_conversations}-{c}", n_turns=1, group=group)
                for who in ("alice", "bob"):
                    record = {"conversation": f"n{n_conversations}-{c}", "turn": 1}
                    record |= {"annotator": who, "labels": ["code_rollback"]}
                    f.write(json.dumps(record | {"group": group.name}) + "\n")
        with CaptureQueriesContext(connection) as captured:
            report = import_annotations(study, path, batch_size=1000)
        assert report.imported == 2 * n_conversations and not report.rejected
        return len(captured)

    small, large = queries(5), queries(100)
    assert large < small + 10, (small, large)


def test_assigning_unassigned_conversations_costs_no_queries_a_record(tmp_path, study):
    """An import that assigns the conversations it names (their first group) writes the
    assignments with the batch: 20,000 such conversations took 201 s on PostgreSQL when
    each was assigned with its own queries."""

    def queries(n_conversations: int) -> int:
        path = tmp_path / f"{n_conversations}.jsonl"
        with path.open("w") as f:
            for c in range(n_conversations):
                make_conversation(study, f"u{n_conversations}-{c}", n_turns=1)
                for who in ("alice", "bob"):
                    record = {"conversation": f"u{n_conversations}-{c}", "turn": 1}
                    record |= {"annotator": who, "labels": ["code_rollback"]}
                    f.write(json.dumps(record | {"group": f"g{n_conversations}"}) + "\n")
        with CaptureQueriesContext(connection) as captured:
            report = import_annotations(study, path, create_members=True, batch_size=1000)
        assert report.imported == 2 * n_conversations and not report.rejected
        assert report.assigned_conversations == n_conversations
        return len(captured)

    small, large = queries(5), queries(100)
    assert large < small + 10, (small, large)
