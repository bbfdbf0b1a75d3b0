"""Write a batch of imported labels at once, by the same round rules as Annotation.submit.

Submitting 40,000 records one by one costs a transaction, a row lock and a state computation
each (60 records/s on PostgreSQL). Here a batch is one transaction: the touched cards' state
rows are locked once, their current labels read once, and the records are then played in
file order in memory, each exactly as Annotation.submit would (RoundRules.check_open_for, the
no-op resubmit of Annotation.same_as, RoundRules.step: the rule of CardState.advance). What
that decides is written with a few statements (COPY on PostgreSQL). A record the round rules
refuse is an error of its own; its neighbours in the batch are still written.

The statements are SQL rather than the ORM: for a batch of 2,000 records, building Django
lookups over 2,000 ids and model objects for every row cost more than the database's work.

A card with no state row yet is played as a fresh one (open, round 1, as CardState.lock would
create it) and its row is inserted with the outcome. Should a browser submit create that row
in the meantime, the insert finds it and the batch is played again from the stored rows.

tests/commands/test_import_batches.py checks on random files that the outcome is identical to
submitting record by record."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from taxonomy.models import Type

from ..db.inserts import insert_card_states
from ..db.labels import (
    LABEL_COLUMNS,
    insert_consensus,
    insert_imported_annotations,
    insert_new_card_states,
)
from ..db.sql import in_list, query_rows
from ..models import (
    Annotation,
    CardState,
    CardStatus,
    Group,
    RoundClosed,
    RoundRules,
    Study,
)
from ..models.queue import mark_done, sync_states

# numbers the batch's decisions, so consensus rows are created in the order cards agreed
_decisions = itertools.count()
# how often a batch is played again when browser submits keep creating its cards' state rows
ATTEMPTS = 5


@dataclass(slots=True)
class LabelItem:
    """One valid record, ready to be written."""

    number: int  # its line in the file, for error messages
    turn_id: int
    group_id: int
    annotator_id: int
    round: int
    type_ids: tuple[int, ...]
    codes: frozenset[str]
    note: str = ""
    evidence: str = ""
    confidence: int | None = None


# a decision's entry: (order, turn, group, method, from round, type ids)


@dataclass(slots=True)
class _Label:
    """A current label of the batch's cards: an existing row (pk set) or one to create."""

    codes: frozenset[str]
    type_ids: tuple[int, ...]
    note: str
    evidence: str
    confidence: int | None
    order: tuple[int, int]  # (0, pk) for existing rows, (1, n) for new ones: creation order
    pk: int | None = None
    item: LabelItem | None = None
    is_current: bool = True
    # an existing row waiting for its annotator's side of a split type (evolution): the
    # card's round waits for it, as CardState.advance does
    pending: bool = False

    def columns(self) -> dict:
        """The annotation row's own columns (the batch adds version, source and time)."""
        item = self.item
        values = (item.turn_id, item.annotator_id, item.round, self.note, self.evidence)
        return dict(zip(LABEL_COLUMNS, (*values, self.confidence, self.is_current), strict=True))

    def same_as(self, item: LabelItem) -> bool:
        # Annotation.same_as on plain values
        return self.codes == item.codes and (self.note, self.evidence, self.confidence) == (
            item.note,
            item.evidence,
            item.confidence,
        )


@dataclass(slots=True)
class _Card(RoundRules):
    """A card's state in one group, in memory: its stored row (pk set, locked) or a new one."""

    turn_id: int
    group_id: int
    status: str = CardStatus.OPEN.value
    round: int = 1
    pk: int | None = None
    created: bool = False  # inserted by this batch before it was played (its last attempt)
    accepted: bool = False
    moved: bool = False
    # (order of the decision in the batch, method, from round, type ids)
    consensus: list[tuple[int, str, int, tuple[int, ...]]] = field(default_factory=list)


class _Replay(Exception):
    """A card's state row appeared while the batch was played (a browser submit made it)."""


def write_batch(
    study: Study, items: list[LabelItem], *, judge: bool = False
) -> list[tuple[int, str]]:
    """Write `items` (in file order) in one transaction; return (line, error) for each record
    the round rules refused. A judge's labels are recorded, never submitted: they move no
    card (Annotation.record rather than Annotation.submit)."""
    if not items:
        return []
    for attempt in range(ATTEMPTS):
        try:
            with transaction.atomic():
                return _play(study, items, judge, last=attempt == ATTEMPTS - 1)
        except _Replay:
            continue
    raise AssertionError("unreachable: the last attempt never replays")  # pragma: no cover


def _play(study: Study, items: list[LabelItem], judge: bool, last: bool) -> list[tuple[int, str]]:
    turn_ids = sorted({i.turn_id for i in items})
    cards = {} if judge else _lock_cards(items, turn_ids, create=last)
    current = _current_labels(turn_ids)
    annotators = _annotators_of({c.group_id for c in cards.values()})
    errors: list[tuple[int, str]] = []
    new_labels: list[_Label] = []
    flipped: list[int] = []
    for item in items:
        # a card shared by several groups has a state in each: the record's group's
        card = cards.get((item.turn_id, item.group_id))
        if card is not None:
            try:
                card.check_open_for(item.round)
            except RoundClosed as e:
                errors.append((item.number, f"round: {e}"))
                continue
            card.accepted = True
        _record(item, current, new_labels, flipped)
        if card is not None:
            _advance(card, current, annotators, study.discussion_rounds)
    now = timezone.now()
    # the new state rows first: should one exist by now, nothing else has been written
    _write_cards(cards, now)
    _write_labels(study, new_labels, flipped, now)
    _write_consensus(study, cards, now)
    if not judge:  # the cards' states in their annotators' queues (models/queue.py)
        sync_states({(i.turn_id, i.group_id) for i in items})
    return errors


# -- reading ----------------------------------------------------------------------------------


def _lock_cards(
    items: list[LabelItem], turn_ids: list[int], create: bool
) -> dict[tuple[int, int], _Card]:
    """The batch's cards in the records' groups ({(turn, group): card}): their stored state
    rows, locked in (turn, group) order (so two imports, or an import and a browser submit,
    never deadlock), and fresh cards for the rest. `create`: insert the missing rows now, as
    CardState.lock does, so that the batch cannot need playing again."""
    keys = sorted({(i.turn_id, i.group_id) for i in items})
    group_ids = sorted({g for _, g in keys})
    created = set()
    if create:
        fresh = CardStatus.OPEN.value
        created = insert_card_states([(t, g, fresh, 1, timezone.now()) for t, g in keys])
    turns_sql, turns_param = in_list("turn_id", turn_ids)
    groups_sql, groups_param = in_list("group_id", group_ids)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    rows = query_rows(
        f'SELECT id, turn_id, group_id, status, round FROM "{CardState._meta.db_table}" '
        f"WHERE {turns_sql} AND {groups_sql} ORDER BY turn_id, group_id{lock}",
        turns_param + groups_param,
    )
    cards = {
        (t, g): _Card(t, g, status, round, pk=pk, created=(t, g) in created)
        for pk, t, g, status, round in rows
    }
    return {key: cards.get(key) or _Card(*key) for key in keys}


def _current_labels(turn_ids: list[int]) -> dict[int, dict[tuple[int, int], _Label]]:
    """{turn: {(annotator, round): current label}} of the batch's cards: one query."""
    through = Annotation.types.through._meta.db_table
    turns_sql, params = in_list("a.turn_id", turn_ids)
    rows = query_rows(
        "SELECT a.id, a.turn_id, a.annotator_id, a.round, a.note, a.evidence, a.confidence, "
        f'a.split_pending, l.type_id, t.code FROM "{Annotation._meta.db_table}" a '
        f'LEFT JOIN "{through}" l ON l.annotation_id = a.id '
        f'LEFT JOIN "{Type._meta.db_table}" t ON t.id = l.type_id '
        f"WHERE a.is_current AND {turns_sql} ORDER BY a.id, l.id",
        params,
    )
    out: dict[int, dict[tuple[int, int], _Label]] = defaultdict(dict)
    for (
        pk,
        turn_id,
        annotator_id,
        round,
        note,
        evidence,
        confidence,
        pending,
    ), links in itertools.groupby(rows, key=lambda row: row[:8]):
        links = [(type_id, code) for *_, type_id, code in links if type_id is not None]
        out[turn_id][(annotator_id, round)] = _Label(
            codes=frozenset(code for _, code in links),
            type_ids=tuple(type_id for type_id, _ in links),
            note=note,
            evidence=evidence,
            confidence=confidence,
            order=(0, pk),
            pk=pk,
            pending=bool(pending),
        )
    return out


def _annotators_of(group_ids: set[int]) -> dict[int, set[int]]:
    rows = Group.annotators.through.objects.filter(group_id__in=group_ids)
    out: dict[int, set[int]] = {g: set() for g in group_ids}
    for group_id, user_id in rows.values_list("group_id", "user_id"):
        out[group_id].add(user_id)
    return out


# -- playing ----------------------------------------------------------------------------------


def _record(
    item: LabelItem,
    current: dict[int, dict[tuple[int, int], _Label]],
    new_labels: list[_Label],
    flipped: list[int],
) -> None:
    """Annotation.record in memory: a new revision, the previous one no longer current,
    unless it is the very same label (a resubmit changes nothing)."""
    key = (item.annotator_id, item.round)
    previous = current[item.turn_id].get(key)
    if previous is not None and not previous.pending and previous.same_as(item):
        return
    if previous is not None:
        previous.is_current = False
        if previous.pk is not None:
            flipped.append(previous.pk)
    label = _Label(
        codes=item.codes,
        type_ids=item.type_ids,
        note=item.note,
        evidence=item.evidence,
        confidence=item.confidence,
        order=(1, len(new_labels)),
        item=item,
    )
    new_labels.append(label)
    current[item.turn_id][key] = label


def _advance(
    card: _Card,
    current: dict[int, dict[tuple[int, int], _Label]],
    annotators: dict[int, set[int]],
    discussion_rounds: int,
) -> None:
    """CardState.advance in memory: the same rule (RoundRules.step) on the same labels."""
    if card.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
        return
    group_annotators = annotators[card.group_id]
    labels = [
        label
        for (annotator_id, round), label in current[card.turn_id].items()
        if round == card.round and annotator_id in group_annotators
    ]
    if any(label.pending for label in labels):
        return  # a label waits for its annotator's split side: nothing is guessed
    from_round = card.round
    moved, method = card.step(
        len(group_annotators), [label.codes for label in labels], discussion_rounds
    )
    if not moved:
        return
    card.moved = True
    if method is not None:
        # advance takes the types of the first current label (by id): the same codes as
        # the others, but possibly of an older taxonomy version
        first = min(labels, key=lambda label: label.order)
        card.consensus.append((next(_decisions), method, from_round, first.type_ids))


# -- writing ----------------------------------------------------------------------------------


def _write_cards(cards: dict[tuple[int, int], _Card], now) -> None:
    """Insert the new cards' state rows with their outcome (a card whose every record was
    refused gets none, as after a rolled-back submit) and update the stored ones that moved:
    one UPDATE per outcome (a handful), not bulk_update's CASE over every card."""
    table = CardState._meta.db_table
    new = [c for c in cards.values() if c.pk is None and c.accepted]
    # no row can be there yet unless a browser submit made it since _lock_cards
    rows = [(c.turn_id, c.group_id, str(c.status), c.round) for c in new]
    if not insert_new_card_states(rows, now):
        raise _Replay
    outcomes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for card in cards.values():
        if card.pk is not None and card.moved:
            outcomes[(str(card.status), card.round)].append(card.pk)
    unused = [c.pk for c in cards.values() if c.created and not c.accepted]
    with connection.cursor() as cursor:
        for (status, round), pks in outcomes.items():
            ids_sql, ids_param = in_list("id", pks)
            cursor.execute(
                f'UPDATE "{table}" SET status = %s, round = %s, updated_at = %s WHERE {ids_sql}',
                [status, round, now, *ids_param],
            )
        if unused:
            ids_sql, ids_param = in_list("id", unused)
            cursor.execute(f'DELETE FROM "{table}" WHERE {ids_sql}', ids_param)


def _write_labels(study: Study, new_labels: list[_Label], flipped: list[int], now) -> None:
    if flipped:
        ids_sql, ids_param = in_list("id", flipped)
        with connection.cursor() as cursor:
            cursor.execute(
                f'UPDATE "{Annotation._meta.db_table}" SET is_current = %s WHERE {ids_sql}',
                [False, *ids_param],
            )
    rows = [(*label.columns().values(), label.type_ids) for label in new_labels]
    insert_imported_annotations(rows, study.taxonomy_version_id, now)
    # the cards labelled in round 1 are done in their annotators' queues (models/queue.py)
    done: dict[int, set[int]] = {}
    for label in new_labels:
        if label.item.round == 1:
            done.setdefault(label.item.annotator_id, set()).add(label.item.turn_id)
    for annotator_id, turn_ids in done.items():
        mark_done(annotator_id, sorted(turn_ids))


def _write_consensus(study: Study, cards: dict[tuple[int, int], _Card], now) -> None:
    # in the order the cards were decided, as one-by-one submits would create them
    decided = sorted(
        (entry[0], card.turn_id, card.group_id, *entry[1:])
        for card in cards.values()
        for entry in card.consensus
    )
    if not decided:
        return
    rows = [entry[1:] for entry in decided]
    insert_consensus(rows, study.taxonomy_version_id, now)
