"""The episode import's writes (importers/episodes.py): episodes and their evidence quotes.
PostgreSQL gets COPY (ids drawn from the sequence first, so a quote names its episode in the
same pass, as the label import writes its labels: building a model object a row costs more
than the database); SQLite gets bulk_create."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection

from ..models import Episode, EvidenceQuote
from .sql import copy_lines, copy_text, next_ids

NULL = r"\N"


def insert_episodes(run_id: int, items: Sequence[tuple[int, dict, list]], now) -> None:
    """Episodes of the judge run `run_id`, created `now`: each item (source line, the
    episode's columns, its quotes as (turn, part, part index, start, end, quote, order))."""
    if not items:
        return
    if connection.vendor != "postgresql":
        episodes = Episode.objects.bulk_create(
            Episode(run_id=run_id, source_line=line, created_at=now, **episode)
            for line, episode, _ in items
        )
        EvidenceQuote.objects.bulk_create(
            EvidenceQuote(
                episode_id=made.pk, turn_id=t, part=p, part_index=x, start=a, end=b,
                quote=q, order=o,
            )
            for made, (_, _, quotes) in zip(episodes, items, strict=True)
            for t, p, x, a, b, q, o in quotes
        )  # fmt: skip
        return
    ids = next_ids(Episode._meta.db_table, len(items))
    stamp = now.isoformat()
    episodes, quotes = [], []
    for pk, (line, e, item_quotes) in zip(ids, items, strict=True):
        valid = NULL if e["run_valid"] is None else ("t" if e["run_valid"] else "f")
        episodes.append(
            f"{pk}\t{e['conversation_id']}\t{run_id}\t{e['first_turn']}\t{e['last_turn']}\t"
            f"{copy_text(e['goal'])}\t{e['confidence']!r}\t{valid}\t"
            f"{copy_text(e['run_invalid_reason'])}\t"
            f"{copy_text(json.dumps(e['run_labels'], ensure_ascii=False))}\t"
            f"{line}\t{stamp}\n"
        )
        for t, p, x, a, b, q, o in item_quotes:
            index = NULL if x is None else x
            quotes.append(f"{pk}\t{t}\t{p}\t{index}\t{a}\t{b}\t{copy_text(q)}\t{o}\n")
    copy_lines(
        Episode._meta.db_table,
        "id, conversation_id, run_id, first_turn, last_turn, goal, confidence, run_valid, "
        "run_invalid_reason, run_labels, source_line, created_at",
        episodes,
    )
    copy_lines(
        EvidenceQuote._meta.db_table,
        'episode_id, turn_id, part, part_index, start, "end", quote, "order"',
        quotes,
    )
