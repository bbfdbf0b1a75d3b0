"""Where the overlapping groups meet main's rules: round-1 blindness (access.py), the batched
label import (importers/label_batch.py), the one seat rule (Group.seat) and the blind gold export, each
per (card, group) on a card two groups share."""

from __future__ import annotations

import json

import pytest

from annotation.access import round1_hidden_from
from annotation.exports import gold_rows
from annotation.importers.annotations import import_annotations
from annotation.models import (
    CardStatus,
    Seat,
    SeatConflict,
    SeatRefused,
)
from tests.factories import label, make_user

pytestmark = pytest.mark.django_db


def hidden(user, study) -> set[int]:
    return set(round1_hidden_from(user, study).values_list("pk", flat=True))


def test_it_hides_a_shared_card_while_round_1_is_open_in_the_users_own_group(
    study, alice, bob, shared
):
    a, b, carol, dave, turn = shared
    label(turn, carol, "code_rollback", group=b)
    label(turn, dave, "code_rollback", group=b)  # round 1 over in B, not in A
    label(turn, alice, "code_rollback", group=a)

    assert turn.pk in hidden(alice, study)  # B's state says nothing about alice's round 1
    assert turn.pk not in hidden(carol, study)
    label(turn, bob, "code_rollback", group=a)
    assert turn.pk not in hidden(alice, study)


def test_it_imports_a_second_groups_labels_on_an_assigned_card_into_its_own_state(
    tmp_path, study, alice, bob, shared
):
    a, b, carol, dave, turn = shared
    erin = make_user("erin")
    path = tmp_path / "labels.jsonl"
    records = [
        {"annotator": "alice", "group": "A", "labels": ["code_rollback"]},
        {"annotator": "bob", "group": "A", "labels": ["code_rollback"]},
        {"annotator": "carol", "group": "B", "labels": ["code_rollback"]},
        {"annotator": "dave", "group": "B", "labels": []},
        # a third group on the same conversation: assigned by the import, its own state
        {"annotator": "erin", "group": "C", "labels": []},
    ]
    path.write_text(
        "".join(json.dumps({"conversation": "c1", "turn": 1} | r) + "\n" for r in records)
    )

    report = import_annotations(study, path, create_members=True)

    assert report.rejected == [] and report.imported == 5
    status = dict(turn.states.values_list("group__name", "status"))
    # A agrees, B disagrees, C (erin alone) makes a `single` consensus
    assert status == {"A": "agreed", "B": "disputed", "C": "agreed"}
    methods = dict(turn.consensus.values_list("group__name", "method"))
    assert methods == {"A": "unanimous", "C": "single"}
    assert turn.conversation.groups.filter(annotators=erin).get().name == "C"


def test_it_refuses_through_group_seat_a_seat_across_groups_sharing_a_conversation(
    study, alice, shared
):
    a, b, carol, dave, turn = shared
    with pytest.raises(SeatConflict, match="alice already sits in group 'A'"):
        b.seat(alice, Seat.ANNOTATOR)
    with pytest.raises(SeatRefused, match="alice already sits in group 'A'"):
        b.seat(alice, Seat.MODERATOR)  # she would see B's labels on cards she labels
    assert not b.annotators.filter(pk=alice.pk).exists() and b.moderator_id is None


def test_it_blanks_every_groups_labels_and_consensus_for_who_is_still_in_round_1(
    study, alice, bob, shared
):
    a, b, carol, dave, turn = shared
    label(turn, carol, "code_rollback", group=b)
    label(turn, dave, "code_rollback", group=b)  # B agreed
    label(turn, alice, "code_rollback", group=a)  # A still open: alice is blind

    rows = {r["group"]: r for r in gold_rows(study, blind_for=alice)}

    assert rows["A"]["status"] == CardStatus.OPEN
    assert rows["B"]["labels_carol"] is None and rows["B"]["labels_dave"] is None
    assert rows["B"]["consensus"] is None and rows["B"]["method"] is None
    assert rows["A"]["labels_alice"] == ["code_rollback"]
    full = {r["group"]: r for r in gold_rows(study)}
    assert full["B"]["consensus"] == ["code_rollback"]
    assert full["B"]["labels_carol"] == ["code_rollback"]
