"""A label import meets a browser submit on PostgreSQL: an import batch plays the cards that
have no state row yet as fresh ones and inserts their rows with the outcome. When a submit
in another connection creates one of those rows meanwhile, the insert is refused by the
unique constraint and the batch is played again from the stored rows: both labels count and
the card moves as if the submit had come first."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from annotation.importers import label_batch
from annotation.importers.annotations import import_annotations
from annotation.models import Annotation, CardState, CardStatus, Consensus, Method
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _submit_in_another_connection(turn, group, user, codes) -> None:
    """A browser submit, committed on its own connection before this returns."""
    errors = []

    def run() -> None:
        try:
            by_code = turn.conversation.study.taxonomy_version.types_by_code()
            Annotation.submit(
                turn=turn, group=group, annotator=user, round=1, types=[by_code[c] for c in codes]
            )
        except Exception as e:  # re-raised below, in the test's thread
            errors.append(e)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the submit hung: the batch locked the card it had not stored"
    assert not errors, errors


@pytest.mark.parametrize(
    ("bob_codes", "status", "methods"),
    [(["code_rollback"], CardStatus.AGREED, [Method.UNANIMOUS]), ([], CardStatus.DISPUTED, [])],
)
def test_a_submit_that_creates_a_card_state_during_a_batch_makes_it_play_again(
    tmp_path, monkeypatch, bob_codes, status, methods
):
    study = make_study()
    alice, bob = make_user("alice"), make_user("bob")
    group = make_group(study, "g1", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    path = tmp_path / "labels.jsonl"
    record = {"conversation": "c1", "turn": 1, "annotator": "alice", "group": "g1"}
    path.write_text(json.dumps(record | {"labels": ["code_rollback"]}) + "\n")

    plays = []
    read_labels = label_batch._current_labels

    def current_labels(turn_ids):
        # after the batch looked for the card's state row (there was none), before it plays
        plays.append(CardState.objects.filter(turn=turn).exists())
        if len(plays) == 1:
            _submit_in_another_connection(turn, group, bob, bob_codes)
        return read_labels(turn_ids)

    monkeypatch.setattr(label_batch, "_current_labels", current_labels)

    report = import_annotations(study, path)

    assert (report.imported, report.rejected) == (1, [])
    # played twice: first with no state row, then with the row the submit made
    assert plays == [False, True]
    current = Annotation.objects.current().filter(turn=turn, round=1)
    assert sorted((a.annotator.username, sorted(a.codes)) for a in current) == [
        ("alice", ["code_rollback"]),
        ("bob", sorted(bob_codes)),
    ]
    state = CardState.objects.get(turn=turn, group=group)
    assert (state.status, state.round) == (status, 1 if methods else 2)
    assert list(Consensus.objects.filter(turn=turn).values_list("method", flat=True)) == methods
