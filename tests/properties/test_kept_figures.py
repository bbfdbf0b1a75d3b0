"""The kept figures (issue 25: StudyFigures, GroupFigures, kept by the database's triggers)
equal a recount from the rows after every step of random sequences of writes, through each
write path the app has: conversations made with the ORM and imported (COPY on PostgreSQL),
assigned through the queryset and the bulk writer, unassigned, set aside and back, cut (their
n_turns changed, as a split does), deleted with their cascade; groups made and deleted; card
states made by labels (both annotators agreeing or not), reopened, written in bulk and
deleted; label_writes moving with every label write and never going back.

Runs on the database of the run: SQLite's row triggers by default, PostgreSQL's statement
triggers with DATABASE_URL (`-m postgres` is not needed: the same test). Each example in a
savepoint rolled back at its end (as test_round_rules.py explains)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.db.inserts import insert_assignments, insert_card_states
from annotation.importers import import_files
from annotation.models import (
    AlreadyDecided,
    Assignment,
    CardState,
    CardStatus,
    Conversation,
    Group,
    NotDecidable,
    RoundClosed,
    RoundOutOfRange,
    SetAside,
    Study,
    Turn,
)
from tests.factories import label, make_conversation, make_group, make_study, make_user
from tests.properties.figures import check_figures

pytestmark = pytest.mark.django_db

OPS = [
    "conversation",
    "import",
    "assign",
    "bulk_assign",
    "unassign",
    "set_aside",
    "back_in_set",
    "cut",
    "delete",
    "label_agree",
    "label_differ",
    "reopen",
    "bulk_states",
    "delete_state",
    "group",
    "delete_group",
]
CODES = ["code_rollback", "ambiguous_instruction"]
REFUSED = (RoundClosed, RoundOutOfRange, AlreadyDecided, NotDecidable)


class World:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.studies = [make_study("s1"), make_study("s2")]
        self.n = 0
        self.groups: list[Group] = []
        for study in self.studies:
            self.new_group(study)

    def new_group(self, study: Study) -> Group:
        self.n += 1
        people = [make_user(f"u{self.n}{x}") for x in "ab"]
        group = make_group(study, f"g{self.n}", people)
        group.people = people
        self.groups.append(group)
        return group

    def pick(self, items: list, k: int):
        return items[k % len(items)] if items else None

    def conversation(self, k: int) -> Conversation | None:
        return self.pick(list(Conversation.objects.order_by("pk")), k)

    def group_of(self, study_id: int, k: int) -> Group | None:
        return self.pick([g for g in self.groups if g.study_id == study_id], k)

    def step(self, op: str, k: int) -> None:
        self.n += 1
        study = self.studies[k % 2]
        if op == "conversation":
            group = self.group_of(study.pk, k) if k % 3 else None
            make_conversation(study, f"c{self.n}", n_turns=1 + k % 4, group=group)
        elif op == "import":
            path = self.folder / f"i{self.n}.jsonl"
            with path.open("w") as f:
                for i in range(1 + k % 3):
                    messages = []
                    for t in range(1 + (k + i) % 3):
                        messages += [
                            {"role": "user", "content": f"ask {t}"},
                            {"role": "assistant", "content": f"answer {t}"},
                        ]
                    f.write(json.dumps({"id": f"imp{self.n}-{i}", "messages": messages}) + "\n")
            assert not import_files(study, [path], fmt="native").errors
        elif op in ("assign", "bulk_assign"):
            conversation = self.conversation(k)
            group = conversation and self.group_of(conversation.study_id, k // 7)
            if group is None or Assignment.objects.filter(conversation=conversation).exists():
                return  # one group a conversation here: the labels know their group
            if op == "assign":
                Conversation.objects.filter(pk=conversation.pk).assign(group)
            else:
                insert_assignments([(conversation.pk, group.pk, timezone.now())])
        elif op == "unassign":
            assignment = self.pick(list(Assignment.objects.order_by("pk")), k)
            if assignment is not None:
                assignment.delete()
        elif op in ("set_aside", "back_in_set"):
            conversation = self.conversation(k)
            if conversation is not None:
                value = SetAside.SAMPLE if op == "set_aside" else SetAside.NO
                Conversation.objects.filter(pk=conversation.pk).update(set_aside=value)
        elif op == "cut":
            conversation = self.conversation(k)
            if conversation is not None:
                conversation.n_turns = max(0, conversation.n_turns + (1 if k % 2 else -1))
                conversation.save(update_fields=["n_turns"])
        elif op == "delete":
            conversation = self.conversation(k)
            if conversation is not None:
                conversation.delete()
        elif op in ("label_agree", "label_differ"):
            turn = self.pick(list(Turn.objects.filter(conversation__groups__isnull=False)), k)
            if turn is None:
                return
            group = turn.conversation.groups.get()
            people = group.people if hasattr(group, "people") else list(group.annotators.all())
            differ = op == "label_differ"
            for i, person in enumerate(people):
                state = CardState.objects.filter(turn=turn, group=group).first()
                if state is not None and state.status != CardStatus.OPEN:
                    return
                label(turn, person, CODES[i if differ else 0], group=group)
        elif op == "reopen":
            state = self.pick(list(CardState.objects.exclude(status=CardStatus.OPEN)), k)
            if state is not None:
                state.reopen()
        elif op == "bulk_states":
            turn = self.pick(list(Turn.objects.filter(conversation__groups__isnull=False)), k)
            if turn is not None:
                group = turn.conversation.groups.get()
                status = [CardStatus.OPEN, CardStatus.DISPUTED, CardStatus.ESCALATED][k % 3]
                insert_card_states([(turn.pk, group.pk, status, 2, timezone.now())])
        elif op == "delete_state":
            state = self.pick(list(CardState.objects.order_by("pk")), k)
            if state is not None:
                state.delete()
        elif op == "group":
            self.new_group(study)
        elif op == "delete_group":
            group = self.pick(self.groups, k)
            if group is not None and len(self.groups) > 1:
                self.groups.remove(group)
                group.delete()


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 60)), max_size=30))
def test_the_kept_figures_equal_a_recount_after_every_write(steps, tmp_path):
    savepoint = transaction.atomic()
    savepoint.__enter__()
    try:
        world = World(tmp_path)
        writes: dict = {}
        check_figures(writes)
        for op, k in steps:
            try:
                with transaction.atomic():
                    world.step(op, k)
            except REFUSED:
                pass  # the rounds' refusal, nothing written
            check_figures(writes)
    finally:
        transaction.set_rollback(True)
        savepoint.__exit__(None, None, None)


def test_a_study_and_a_group_get_their_row_and_lose_it(db):
    study = make_study("s9")
    group = make_group(study, "g")
    assert study.figures.conversations == 0 and group.figures.cards == 0
    make_conversation(study, "c1", n_turns=3, group=group)
    check_figures()
    group.delete()
    study.delete()
    check_figures()


@pytest.mark.django_db(transaction=True)
def test_the_figures_stay_right_whichever_table_is_emptied_first():
    """`flush` (every transactional test's teardown; SQLite's DELETEs, in an order of its
    own that changes with the process's hash seed) may empty the conversations before their
    assignments and card states: the assignment's trigger then found no conversation and
    set the group's cards to NULL ("NOT NULL constraint failed: annotation_groupfigures.cards"),
    and every later test of the run failed. Either order keeps the figures right."""
    from django.db import connection

    study = make_study("order")
    alice, bob = make_user("alice"), make_user("bob")
    group = make_group(study, "g", [alice, bob])
    make_conversation(study, "c1", n_turns=2, group=group)
    make_conversation(study, "c2", n_turns=3, group=group)
    make_conversation(study, "c3", n_turns=1)
    check_figures()
    with transaction.atomic(), connection.cursor() as cursor:
        # the conversations first (foreign keys are checked at commit), then what names them
        key = Conversation.objects.get(external_id="c1").pk
        cursor.execute(
            "DELETE FROM annotation_queuecard WHERE turn_id IN "
            "(SELECT id FROM annotation_turn WHERE conversation_id = %s)",
            [key],
        )
        cursor.execute("DELETE FROM annotation_turn WHERE conversation_id = %s", [key])
        cursor.execute("DELETE FROM annotation_conversation WHERE id = %s", [key])
        check_figures()
        cursor.execute("DELETE FROM annotation_assignment WHERE conversation_id = %s", [key])
    check_figures()
    with transaction.atomic(), connection.cursor() as cursor:
        tables = ("annotation_queuecard", "annotation_turn", "annotation_conversation")
        for table in (*tables, "annotation_assignment"):
            cursor.execute(f"DELETE FROM {table}")  # noqa: S608 (a table name of ours)
    check_figures()


@pytest.mark.django_db(transaction=True)
def test_a_migration_keeps_the_figures_right_even_when_it_rebuilds_the_turn_table():
    """On SQLite, AlterField on Turn rebuilds its table: with the figures' triggers in place
    the rename failed ("error in trigger lp_ann_ins: no such table"). `migrate` drops them
    first and puts them back after, the figures counted afresh. PostgreSQL alters a table in
    place: its triggers stay through `migrate`, and the figures stay right."""
    from django.core.management.sql import emit_post_migrate_signal, emit_pre_migrate_signal
    from django.db import connection

    from annotation.models import StudyFigures

    study = make_study("rebuilt")
    make_conversation(study, "c1", n_turns=2)
    emit_pre_migrate_signal(verbosity=0, interactive=False, db="default")
    if connection.vendor == "sqlite":
        with connection.schema_editor() as editor:
            editor._remake_table(Turn)  # what AlterField on Turn does on SQLite
    make_conversation(study, "c2", n_turns=3)  # written during the migration
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    check_figures()
    make_conversation(study, "c3", n_turns=1)  # the triggers are in place after it
    check_figures()
    assert StudyFigures.objects.get(study=study).conversations == 3
    assert StudyFigures.objects.get(study=study).turns == 6
