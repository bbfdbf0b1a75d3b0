"""Write a batch of imported labels at once, by the same round rules as Annotation.submit.

Submitting 40,000 records one by one costs a transaction, a row lock and a state computation
each (60 records/s on PostgreSQL). Here a batch is one transaction: the touched cards' state
rows are locked once, their current labels read once, and the records are then played in
file order in memory, each exactly as Annotation.submit would (CardState.check_open_for, the
no-op resubmit of Annotation.same_as, CardState.step: the rule of CardState.advance). What
that decides is written with a few bulk statements. A record the round rules refuse is an
error of its own; its neighbours in the batch are still written.

tests/commands/test_import_batches.py checks on random files that the outcome is identical to
submitting record by record."""

from __future__ import annotations

import io
import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from taxonomy.models import Type

from .importers.writer import _text
from .models import (
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Group,
    RoundClosed,
    Source,
    Study,
)

# numbers the batch's decisions, so consensus rows are created in the order cards agreed
_decisions = itertools.count()


@dataclass
class LabelItem:
    """One valid record, ready to be written."""

    number: int  # its line in the file, for error messages
    turn_id: int
    group: Group
    annotator_id: int
    round: int
    types: list[Type]
    note: str = ""
    evidence: str = ""
    confidence: int | None = None

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(t.code for t in self.types)


@dataclass
class _Label:
    """A current label of the batch's cards: an existing row (pk set) or one to create."""

    codes: frozenset[str]
    type_ids: list[int]
    note: str
    evidence: str
    confidence: int | None
    order: tuple[int, int]  # (0, pk) for existing rows, (1, n) for new ones: creation order
    pk: int | None = None
    item: LabelItem | None = None
    is_current: bool = True

    def same_as(self, item: LabelItem) -> bool:
        # Annotation.same_as on plain values
        return self.codes == item.codes and (self.note, self.evidence, self.confidence) == (
            item.note,
            item.evidence,
            item.confidence,
        )


@dataclass
class _Card:
    state: CardState
    existed: bool
    accepted: bool = False
    moved: bool = False
    # (order of the decision in the batch, method, from round, type ids)
    consensus: list[tuple[int, str, int, list[int]]] = field(default_factory=list)


def write_batch(
    study: Study, items: list[LabelItem], *, judge: bool = False
) -> list[tuple[int, str]]:
    """Write `items` (in file order) in one transaction; return (line, error) for each record
    the round rules refused. A judge's labels are recorded, never submitted: they move no
    card (Annotation.record rather than Annotation.submit)."""
    if not items:
        return []
    with transaction.atomic():
        turn_ids = sorted({i.turn_id for i in items})
        cards = {} if judge else _lock_cards(items, turn_ids)
        current = _current_labels(turn_ids)
        annotators = _annotators_of({c.state.group_id for c in cards.values()})
        errors: list[tuple[int, str]] = []
        new_labels: list[_Label] = []
        flipped: list[int] = []
        for item in items:
            # a card shared by several groups has a state in each: the record's group's
            card = cards.get((item.turn_id, item.group.pk))
            if card is not None:
                try:
                    card.state.check_open_for(item.round)
                except RoundClosed as e:
                    errors.append((item.number, f"round: {e}"))
                    continue
                card.accepted = True
            _record(item, current, new_labels, flipped)
            if card is not None:
                _advance(card, current, annotators, study.discussion_rounds)
        _write(study, cards, new_labels, flipped)
    return errors


def _lock_cards(items: list[LabelItem], turn_ids: list[int]) -> dict[tuple[int, int], _Card]:
    """The state rows of the batch's cards in the records' groups ({(turn, group): card}),
    created when missing and locked in (turn, group) order (so two imports, or an import
    and a browser submit, never deadlock)."""
    keys = sorted({(i.turn_id, i.group.pk) for i in items})
    group_ids = {g for _, g in keys}
    rows = CardState.objects.filter(turn_id__in=turn_ids, group_id__in=group_ids)
    existing = set(rows.values_list("turn_id", "group_id"))
    missing = [k for k in keys if k not in existing]
    if connection.vendor == "postgresql":
        # one statement and no ORM objects; a row a browser submit just made is kept
        with connection.cursor() as cursor:
            cursor.execute(
                f'INSERT INTO "{CardState._meta.db_table}" (turn_id, group_id, status, round, '
                "updated_at) SELECT t, g, %s, 1, now() FROM unnest(%s::bigint[], "
                "%s::bigint[]) AS x(t, g) ON CONFLICT (turn_id, group_id) DO NOTHING",
                [CardStatus.OPEN.value, [t for t, _ in missing], [g for _, g in missing]],
            )
    else:
        CardState.objects.bulk_create(
            [CardState(turn_id=t, group_id=g) for t, g in missing], ignore_conflicts=True
        )
    wanted = set(keys)
    states = rows.select_for_update().order_by("turn_id", "group_id")
    return {
        (s.turn_id, s.group_id): _Card(state=s, existed=(s.turn_id, s.group_id) in existing)
        for s in states
        if (s.turn_id, s.group_id) in wanted
    }


def _current_labels(turn_ids: list[int]) -> dict[int, dict[tuple[int, int], _Label]]:
    """{turn: {(annotator, round): current label}} of the batch's cards: two queries."""
    rows = list(
        Annotation.objects.current()
        .filter(turn_id__in=turn_ids)
        .values_list("pk", "turn_id", "annotator_id", "round", "note", "evidence", "confidence")
    )
    types: dict[int, list[tuple[int, str]]] = defaultdict(list)
    through = Annotation.types.through.objects.filter(annotation_id__in=[r[0] for r in rows])
    for annotation_id, type_id, code in through.values_list(
        "annotation_id", "type_id", "type__code"
    ).order_by("id"):
        types[annotation_id].append((type_id, code))
    out: dict[int, dict[tuple[int, int], _Label]] = defaultdict(dict)
    for pk, turn_id, annotator_id, round, note, evidence, confidence in rows:
        out[turn_id][(annotator_id, round)] = _Label(
            codes=frozenset(code for _, code in types[pk]),
            type_ids=[type_id for type_id, _ in types[pk]],
            note=note,
            evidence=evidence,
            confidence=confidence,
            order=(0, pk),
            pk=pk,
        )
    return out


def _annotators_of(group_ids: set[int]) -> dict[int, set[int]]:
    rows = Group.annotators.through.objects.filter(group_id__in=group_ids)
    out: dict[int, set[int]] = {g: set() for g in group_ids}
    for group_id, user_id in rows.values_list("group_id", "user_id"):
        out[group_id].add(user_id)
    return out


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
    if previous is not None and previous.same_as(item):
        return
    if previous is not None:
        previous.is_current = False
        if previous.pk is not None:
            flipped.append(previous.pk)
    label = _Label(
        codes=item.codes,
        type_ids=[t.pk for t in item.types],
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
    """CardState.advance in memory: the same rule (CardState.step) on the same labels."""
    state = card.state
    if state.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
        return
    group_annotators = annotators[state.group_id]
    labels = sorted(
        (
            label
            for (annotator_id, round), label in current[state.turn_id].items()
            if round == state.round and annotator_id in group_annotators
        ),
        key=lambda label: label.order,
    )
    from_round = state.round
    moved, method = state.step(
        len(group_annotators), [label.codes for label in labels], discussion_rounds
    )
    if not moved:
        return
    card.moved = True
    if method is not None:
        # advance takes the types of the first current label (by id): the same codes as
        # the others, but possibly of an older taxonomy version
        card.consensus.append((next(_decisions), method, from_round, labels[0].type_ids))


def _write(
    study: Study, cards: dict[tuple[int, int], _Card], new_labels: list[_Label], flipped: list[int]
) -> None:
    now = timezone.now()
    if flipped:
        Annotation.objects.filter(pk__in=flipped).update(is_current=False)
    if connection.vendor == "postgresql":
        _copy_annotations(study, new_labels, now)
    else:
        _insert_annotations(study, new_labels, now)
    _write_cards(study, cards, now)


def _insert_annotations(study: Study, new_labels: list[_Label], now) -> None:
    rows = Annotation.objects.bulk_create(
        Annotation(
            turn_id=label.item.turn_id,
            annotator_id=label.item.annotator_id,
            round=label.item.round,
            taxonomy_version_id=study.taxonomy_version_id,
            note=label.note,
            evidence=label.evidence,
            confidence=label.confidence,
            source=Source.IMPORT,
            is_current=label.is_current,
            created_at=now,
        )
        for label in new_labels
    )
    Through = Annotation.types.through
    Through.objects.bulk_create(
        Through(annotation_id=row.pk, type_id=type_id)
        for row, label in zip(rows, new_labels, strict=True)
        for type_id in label.type_ids
    )


def _copy_annotations(study: Study, new_labels: list[_Label], now) -> None:
    """PostgreSQL: the rows and their type links with COPY, as the conversation importer
    writes turns (importers/writer.py): building ORM objects cost more than the database."""
    ids = _next_ids(Annotation, len(new_labels))
    created, version = now.isoformat(), str(study.taxonomy_version_id)
    rows, links = [], []
    for pk, label in zip(ids, new_labels, strict=True):
        item = label.item
        confidence = r"\N" if label.confidence is None else str(label.confidence)
        rows.append(
            (
                str(pk),
                str(item.turn_id),
                str(item.annotator_id),
                str(item.round),
                version,
                _text(label.note),
                _text(label.evidence),
                confidence,
                Source.IMPORT.value,
                "t" if label.is_current else "f",
                created,
            )
        )
        links += [(str(pk), str(type_id)) for type_id in label.type_ids]
    _copy(
        Annotation,
        "id, turn_id, annotator_id, round, taxonomy_version_id, note, evidence, confidence, "
        "source, is_current, created_at",
        rows,
    )
    _copy(Annotation.types.through, "annotation_id, type_id", links)


def _next_ids(model, n: int) -> list[int]:
    """n ids from the table's sequence, so the link rows can name their row in one pass."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [model._meta.db_table, n],
        )
        return [row[0] for row in cursor.fetchall()]


def _copy(model, columns: str, rows: list[tuple[str, ...]]) -> None:
    """COPY rows (already in COPY's text format) into the model's table."""
    if not rows:
        return
    data = io.BytesIO(b"".join("\t".join(row).encode() + b"\n" for row in rows))
    with connection.cursor() as cursor, connection.wrap_database_errors:
        # Django's DatabaseError, as execute() would raise, if a row is refused
        cursor.cursor.copy_expert(f'COPY "{model._meta.db_table}" ({columns}) FROM STDIN', data)


def _write_cards(study: Study, cards: dict[tuple[int, int], _Card], now) -> None:
    # one UPDATE per outcome (a handful), not bulk_update's CASE over every card
    outcomes: dict[tuple[str, int], list[int]] = defaultdict(list)
    for card in cards.values():
        if card.moved:
            outcomes[(card.state.status, card.state.round)].append(card.state.pk)
    for (status, round), pks in outcomes.items():
        CardState.objects.filter(pk__in=pks).update(status=status, round=round, updated_at=now)
    # a card whose every record was refused keeps no state row, as after a rolled-back submit
    unused = [c.state.pk for c in cards.values() if not c.existed and not c.accepted]
    if unused:
        CardState.objects.filter(pk__in=unused).delete()
    # in the order the cards were decided, as one-by-one submits would create them
    entries = sorted(
        ((entry[0], c.state, entry[1:]) for c in cards.values() for entry in c.consensus),
        key=lambda e: e[0],
    )
    decided = [(state, rest) for _, state, rest in entries]
    if not decided:
        return
    if connection.vendor == "postgresql":
        _copy_consensus(study, decided, now)
        return
    consensus = Consensus.objects.bulk_create(
        Consensus(
            turn_id=state.turn_id,
            group_id=state.group_id,
            method=method,
            from_round=from_round,
            taxonomy_version_id=study.taxonomy_version_id,
            decided_at=now,
        )
        for state, (method, from_round, _) in decided
    )
    Through = Consensus.types.through
    Through.objects.bulk_create(
        Through(consensus_id=row.pk, type_id=type_id)
        for row, (_, (_, _, type_ids)) in zip(consensus, decided, strict=True)
        for type_id in type_ids
    )


def _copy_consensus(study: Study, decided: list, now) -> None:
    ids = _next_ids(Consensus, len(decided))
    decided_at, version = now.isoformat(), str(study.taxonomy_version_id)
    rows, links = [], []
    for pk, (state, (method, from_round, type_ids)) in zip(ids, decided, strict=True):
        rows.append(
            (
                str(pk),
                str(state.turn_id),
                str(state.group_id),
                method,
                decided_at,
                str(from_round),
                version,
                "",
                "t",
            )
        )
        links += [(str(pk), str(type_id)) for type_id in type_ids]
    _copy(
        Consensus,
        "id, turn_id, group_id, method, decided_at, from_round, taxonomy_version_id, "
        "rationale, is_current",
        rows,
    )
    _copy(Consensus.types.through, "consensus_id, type_id", links)
