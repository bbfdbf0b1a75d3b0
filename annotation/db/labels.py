"""The label import's writes (importers/label_batch.py): the new cards' state rows, the
annotations and the consensus rows with their type links. PostgreSQL gets COPY (ids drawn
from the sequences first, so a type link names its row in the same pass: building ORM
objects costs more than the database, as for the conversation importer's turns); SQLite gets
bulk_create."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import IntegrityError, connection, transaction

from ..models import Annotation, CardState, Consensus, Source
from .inserts import insert_card_states
from .sql import copy_lines, copy_text, next_ids

# an annotation row: these columns, then its type ids
LABEL_COLUMNS = ("turn_id", "annotator_id", "round", "note", "evidence", "confidence", "is_current")
# a consensus row: these columns, then its type ids
DECISION_COLUMNS = ("turn_id", "group_id", "method", "from_round")


def insert_new_card_states(rows: Sequence[tuple], now) -> bool:
    """Insert the state rows (turn_id, group_id, status, round) of cards that had none when
    the batch locked them. False if one is there by now (a browser submit made it
    meanwhile): the caller plays the batch again."""
    if not rows:
        return True
    if connection.vendor == "postgresql":
        # COPY: the unique constraint refuses the whole COPY if a row is there already
        stamp = now.isoformat()
        lines = [
            f"{turn}\t{group}\t{status}\t{round}\t{stamp}\n" for turn, group, status, round in rows
        ]
        try:
            with transaction.atomic():
                copy_lines(
                    CardState._meta.db_table, "turn_id, group_id, status, round, updated_at", lines
                )
        except IntegrityError:
            return False
        return True
    inserted = insert_card_states([(*row, now) for row in rows])
    return len(inserted) == len(rows)


def insert_imported_annotations(rows: Sequence[tuple], version_id: int, now) -> None:
    """Imported annotations (source IMPORT, created `now`, on taxonomy version `version_id`):
    each row LABEL_COLUMNS' values then its type ids."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        batch = {"source": Source.IMPORT, "taxonomy_version_id": version_id, "created_at": now}
        _bulk_create(Annotation, "annotation_id", batch, LABEL_COLUMNS, rows)
        return
    ids = next_ids(Annotation._meta.db_table, len(rows))
    tail = f"\t{Source.IMPORT.value}\t%s\t{now.isoformat()}\n"
    current, replaced = tail % "t", tail % "f"
    lines, links = [], []
    for pk, row in zip(ids, rows, strict=True):
        turn, annotator, round, note, evidence, confidence, is_current, type_ids = row
        confidence = r"\N" if confidence is None else str(confidence)
        lines.append(
            f"{pk}\t{turn}\t{annotator}\t{round}\t{version_id}\t"
            f"{copy_text(note)}\t{copy_text(evidence)}\t{confidence}"
            + (current if is_current else replaced)
        )
        links += [f"{pk}\t{type_id}\n" for type_id in type_ids]
    copy_lines(
        Annotation._meta.db_table,
        "id, turn_id, annotator_id, round, taxonomy_version_id, note, evidence, confidence, "
        "source, is_current, created_at",
        lines,
    )
    copy_lines(Annotation.types.through._meta.db_table, "annotation_id, type_id", links)


def insert_consensus(rows: Sequence[tuple], version_id: int, now) -> None:
    """Current consensus rows (decided `now`, by nobody, on taxonomy version `version_id`),
    in the order given: each row DECISION_COLUMNS' values then its type ids."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        batch = {"taxonomy_version_id": version_id, "decided_at": now}
        _bulk_create(Consensus, "consensus_id", batch, DECISION_COLUMNS, rows)
        return
    ids = next_ids(Consensus._meta.db_table, len(rows))
    tail = f"\t{now.isoformat()}\t%s\t{version_id}\t\tt\n"
    lines, links = [], []
    for pk, (turn_id, group_id, method, from_round, type_ids) in zip(ids, rows, strict=True):
        lines.append(f"{pk}\t{turn_id}\t{group_id}\t{method}" + tail % from_round)
        links += [f"{pk}\t{type_id}\n" for type_id in type_ids]
    copy_lines(
        Consensus._meta.db_table,
        "id, turn_id, group_id, method, decided_at, from_round, taxonomy_version_id, "
        "rationale, is_current",
        lines,
    )
    copy_lines(Consensus.types.through._meta.db_table, "consensus_id, type_id", links)


def _bulk_create(model, link: str, batch: dict, columns: Sequence[str], rows) -> None:
    """SQLite: rows of `model` (each `columns`' values then its type ids, with `batch`'s
    values) and their type links (`link` the through table's column naming the row)."""
    made = model.objects.bulk_create(
        model(**batch, **dict(zip(columns, row[:-1], strict=True))) for row in rows
    )
    through = model.types.through
    through.objects.bulk_create(
        through(**{link: obj.pk, "type_id": type_id})
        for obj, row in zip(made, rows, strict=True)
        for type_id in row[-1]
    )
