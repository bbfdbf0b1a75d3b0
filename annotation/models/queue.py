"""Each annotator's cards, kept (issue 25): one row per card an annotator holds in a study
(`QueueCard`: its place among their cards, whether they have labelled or tagged it, when
they put it off) and one per annotator and study with the counts (`QueueProgress`). The
annotator's pages read them by index: the next card is a seek on the "fresh" partial index
after the card's place, the card's place and its neighbours are seeks on (annotator, study,
ordinal), the progress is one row. Nothing per request scans the annotator's labels, so the
pages take the same time with 40 or 40,000 cards.

What changes them, in the same transaction as the write:
- a round-1 label (Annotation.record, the batched label import) or an open-sort tag set:
  `mark_done` (the card's row and the count, by the rows it flipped);
- a skip or flag (CardSkip.put_off): `mark_put_off`;
- what changes which cards someone holds or their order (an assignment, a seat taken or
  left, turns written to an assigned conversation, a conversation deleted, a taxonomy move):
  `rebuild`, the rows of those annotators recomputed from the labels, tags and skips in one
  INSERT ... SELECT. These are the lead's bulk operations, never the annotator's path.

"My cards" are the turns of the conversations assigned to the groups I annotate in, in the
study, in the order (conversation, index) (TurnQuerySet.for_annotator); "done" is my current
round-1 label or my open-sort tag set on the card (TurnQuerySet.annotated_by); "put off" my
skip or flag (CardSkip). tests/properties/test_queue_kept.py recounts them after random
sequences of every write path."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection, models
from django.db.models import F, Q
from django.db.models.signals import m2m_changed, post_save

from .corpus import Turn
from .study import Group, Study, Unit


class QueueCard(models.Model):
    """A card (`turn`) as its `annotator` holds it in `study` (through `group`): its 1-based
    place among their cards (`ordinal`), `done` (labelled in round 1, or tagged), and
    `put_off_at` (their skip or flag, None: none)."""

    # db_index=False: the unique (turn, annotator) and the (annotator, study, ordinal)
    # indexes serve lookups by either
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    study = models.ForeignKey(Study, on_delete=models.CASCADE, db_index=False, related_name="+")
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, db_index=False, related_name="+")
    ordinal = models.PositiveIntegerField()
    done = models.BooleanField(default=False)
    put_off_at = models.DateTimeField(null=True, blank=True)
    # the card's state in the group (CardState.status; no state row: open) and whether the
    # annotator has a current label in the round under way (CardStateQuerySet.with_labelled_by):
    # their "to discuss" queue is the disputed rows, not answered (their turn) or answered
    status = models.CharField(max_length=10, default="open")
    answered = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["turn", "annotator"], name="uniq_queue_card"),
            models.UniqueConstraint(
                fields=["annotator", "study", "ordinal"], name="uniq_queue_card_place"
            ),
        ]
        indexes = [
            # the next card: the first fresh one after a place
            models.Index(
                fields=["annotator", "study", "ordinal"],
                condition=Q(done=False, put_off_at__isnull=True),
                name="queue_card_fresh",
            ),
            # then those put off, the oldest first
            models.Index(
                fields=["annotator", "study", "put_off_at", "turn"],
                condition=Q(done=False, put_off_at__isnull=False),
                name="queue_card_put_off",
            ),
            # the discussion queue: my disputed cards, my turn or waiting, in my cards' order
            models.Index(
                fields=["annotator", "study", "answered", "ordinal"],
                condition=Q(status="disputed"),
                name="queue_card_disputed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} #{self.ordinal}: {self.turn_id}"


# a queue card's state columns from CardState and the annotator's labels, for the row's
# {row_turn}, {row_group} and {row_annotator} (SQL expressions)
_STATUS = """COALESCE((SELECT st.status FROM {card_state} st
        WHERE st.turn_id = {row_turn} AND st.group_id = {row_group}), 'open')"""
_ANSWERED = """CASE WHEN EXISTS (SELECT 1 FROM {card_state} st JOIN {annotation} an
            ON an.turn_id = st.turn_id AND an.round = st.round
        WHERE st.turn_id = {row_turn} AND st.group_id = {row_group}
            AND an.annotator_id = {row_annotator} AND an.is_current = %(true)s)
        OR (NOT EXISTS (SELECT 1 FROM {card_state} st
                WHERE st.turn_id = {row_turn} AND st.group_id = {row_group})
            AND EXISTS (SELECT 1 FROM {annotation} an WHERE an.turn_id = {row_turn}
                AND an.annotator_id = {row_annotator} AND an.round = 1
                AND an.is_current = %(true)s))
        THEN %(true)s ELSE %(false)s END"""


class QueueProgress(models.Model):
    """An annotator's counts in a study: their cards, and those they have labelled (or
    tagged). Kept with QueueCard's rows."""

    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="+")
    cards = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "study"], name="uniq_queue_progress")
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} in {self.study_id}: {self.done}/{self.cards}"


# --- the cards as the source tables say (rebuild, and the tests' recount) ---------------------


def _tables() -> dict[str, str]:
    from .corpus import Conversation
    from .opensort import TagSet
    from .rounds import Annotation, Assignment, CardSkip, CardState

    names = {
        "card_state": CardState,
        "queue_card": QueueCard,
        "group": Group,
        "assignment": Assignment,
        "conversation": Conversation,
        "turn": Turn,
        "annotation": Annotation,
        "tag_set": TagSet,
        "card_skip": CardSkip,
    }
    out = {k: connection.ops.quote_name(m._meta.db_table) for k, m in names.items()}
    out["group_annotators"] = connection.ops.quote_name(Group.annotators.through._meta.db_table)
    return out


# every card of the annotators (`users`) in the study, with its place, done and put off: the
# turns of their groups that label turns (a group whose unit is the episode has no cards;
# annotation/episodes/queue.py is its members' queue)
_SELECT = """
SELECT ga.user_id, g.study_id, g.id, t.id,
    ROW_NUMBER() OVER (PARTITION BY ga.user_id ORDER BY t.conversation_id, t."index"),
    CASE WHEN EXISTS (SELECT 1 FROM {annotation} an WHERE an.turn_id = t.id
            AND an.annotator_id = ga.user_id AND an.round = 1 AND an.is_current = %(true)s)
        OR EXISTS (SELECT 1 FROM {tag_set} ts WHERE ts.turn_id = t.id
            AND ts.annotator_id = ga.user_id)
        THEN %(true)s ELSE %(false)s END,
    (SELECT cs.created_at FROM {card_skip} cs WHERE cs.turn_id = t.id
        AND cs.annotator_id = ga.user_id),
    {status}, {answered}
FROM {group_annotators} ga
JOIN {group} g ON g.id = ga.group_id
JOIN {assignment} a ON a.group_id = g.id
JOIN {conversation} c ON c.id = a.conversation_id AND c.study_id = g.study_id
JOIN {turn} t ON t.conversation_id = c.id
WHERE g.study_id = %(study)s AND g.unit = %(turn_unit)s {users}"""

_COLUMNS = "annotator_id, study_id, group_id, turn_id, ordinal, done, put_off_at, status, answered"


def _select(users: str, tables: dict[str, str]) -> str:
    """_SELECT for the annotators `users` (an SQL condition), with the state columns of the
    rows it selects."""
    row = {"row_turn": "t.id", "row_group": "g.id", "row_annotator": "ga.user_id"}
    status = _STATUS.format(**row, **tables)
    answered = _ANSWERED.format(**row, **tables)
    return _SELECT.format(users=users, status=status, answered=answered, **tables)


def _users_sql(column: str, users: list[int] | None) -> tuple[str, dict]:
    if users is None:
        return "", {}
    names = [f"u{i}" for i in range(len(users))]
    placeholders = ", ".join(f"%({n})s" for n in names)
    return f"AND {column} IN ({placeholders})", dict(zip(names, users, strict=True))


def recount(study_id: int, users: Iterable[int] | None = None) -> list[tuple]:
    """The rows QueueCard should hold, from the labels, tags, skips and assignments (in
    QueueCard's column order, `_COLUMNS`): what `rebuild` writes, and what the tests compare
    the kept rows with."""
    users = None if users is None else sorted(set(users))
    if users == []:
        return []
    sql, params = _users_sql("ga.user_id", users)
    params.update(study=study_id, true=True, false=False, turn_unit=Unit.TURN.value)
    with connection.cursor() as cursor:
        cursor.execute(_select(sql, _tables()), params)
        return cursor.fetchall()


def rebuild(study_id: int, users: Iterable[int] | None = None) -> None:
    """Recompute the rows and counts of `users` (None: every annotator of the study, and
    whoever has rows in it) in the study: after a write that changes which cards they hold,
    or their order. One DELETE, one INSERT ... SELECT, one count."""
    if users is None:
        users = set(
            Group.annotators.through.objects.filter(group__study_id=study_id).values_list(
                "user_id", flat=True
            )
        )
        users |= set(
            QueueProgress.objects.filter(study_id=study_id).values_list("annotator_id", flat=True)
        )
    users = sorted(set(users))
    if not users:
        return
    tables = _tables()
    QueueCard.objects.filter(study_id=study_id, annotator_id__in=users).delete()
    sql, params = _users_sql("ga.user_id", users)
    params.update(study=study_id, true=True, false=False, turn_unit=Unit.TURN.value)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {tables['queue_card']} ({_COLUMNS})" + _select(sql, tables),
            params,
        )
    counts = {u: [0, 0] for u in users}
    rows = (
        QueueCard.objects.filter(study_id=study_id, annotator_id__in=users)
        .values_list("annotator_id", "done")
        .annotate(n=models.Count("pk"))
        .order_by()
    )
    for user_id, done, n in rows:
        counts[user_id][0] += n
        if done:
            counts[user_id][1] += n
    for user_id, (cards, done) in counts.items():
        QueueProgress.objects.update_or_create(
            annotator_id=user_id, study_id=study_id, defaults={"cards": cards, "done": done}
        )


def rebuild_groups(group_ids: Iterable[int], users: Iterable[int] | None = None) -> None:
    """`rebuild` for the annotators of these groups (or `users`), study by study."""
    groups = Group.objects.filter(pk__in=list(group_ids))
    by_study: dict[int, set[int]] = {}
    if users is None:
        rows = Group.annotators.through.objects.filter(group__in=groups).values_list(
            "group__study_id", "user_id"
        )
        for study_id, user_id in rows:
            by_study.setdefault(study_id, set()).add(user_id)
    else:
        for study_id in groups.values_list("study_id", flat=True):
            by_study.setdefault(study_id, set()).update(users)
    for study_id, members in by_study.items():
        rebuild(study_id, members)


def rebuild_conversations(conversation_ids: Iterable[int]) -> None:
    """`rebuild` for the annotators of the groups these conversations are assigned to (turns
    written to, or deleted from, an assigned conversation)."""
    from .rounds import Assignment

    ids = sorted(set(conversation_ids))
    group_ids: set[int] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = Assignment.objects.filter(conversation_id__in=chunk).values_list("group_id")
        group_ids.update(g for (g,) in rows.distinct())
    if group_ids:
        rebuild_groups(group_ids)


# --- the annotator's writes ---------------------------------------------------------------------


def mark_done(annotator_id: int, turn_ids: Iterable[int]) -> None:
    """The annotator has labelled (round 1) or tagged these cards (of one study): their rows
    done, their progress counted by the rows that changed (a revision changes none, and
    costs one query; a first label two)."""
    turn_ids = sorted(set(turn_ids))
    for start in range(0, len(turn_ids), 500):
        chunk = turn_ids[start : start + 500]
        rows = QueueCard.objects.filter(annotator_id=annotator_id, turn_id__in=chunk)
        n = rows.filter(done=False).update(done=True)
        if n:
            study = rows.values("study_id")[:1]
            QueueProgress.objects.filter(annotator_id=annotator_id, study_id=study).update(
                done=F("done") + n
            )


def mark_put_off(annotator_id: int, turn_id: int, when) -> None:
    """The annotator skipped or flagged the card at `when`: it goes to the end of their
    queue (the oldest put off first)."""
    QueueCard.objects.filter(annotator_id=annotator_id, turn_id=turn_id).update(put_off_at=when)


def sync_states(cards: Iterable[tuple[int, int]]) -> None:
    """These cards' (turn id, group id) state moved, or one of their annotators labelled a
    round: their rows' `status` and `answered` again, for every annotator of the group. One
    UPDATE per group (per 500 cards)."""
    by_group: dict[int, set[int]] = {}
    for turn_id, group_id in cards:
        by_group.setdefault(group_id, set()).add(turn_id)
    if not by_group:
        return
    tables = _tables()
    row = {
        "row_turn": f"{tables['queue_card']}.turn_id",
        "row_group": f"{tables['queue_card']}.group_id",
        "row_annotator": f"{tables['queue_card']}.annotator_id",
    }
    sql = (
        f"UPDATE {tables['queue_card']} SET status = {_STATUS}, answered = {_ANSWERED} "
        f"WHERE {tables['queue_card']}.group_id = %(group)s AND {tables['queue_card']}.turn_id IN "
    ).format(**row, **tables)
    with connection.cursor() as cursor:
        for group_id, turn_ids in by_group.items():
            ids = sorted(turn_ids)
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                names = {f"t{i}": pk for i, pk in enumerate(chunk)}
                placeholders = ", ".join(f"%({n})s" for n in names)
                params = {"group": group_id, "true": True, "false": False, **names}
                cursor.execute(sql + f"({placeholders})", params)


# --- the annotator's reads --------------------------------------------------------------------


def progress(study, user) -> tuple[int, int]:
    """(done, cards) of `user` in `study`: one row."""
    row = (
        QueueProgress.objects.filter(annotator_id=user.pk, study_id=study.pk)
        .values_list("done", "cards")
        .first()
    )
    return row or (0, 0)


def disputed(study, user, answered: bool):
    """`user`'s disputed cards in `study`, their turn (`answered` False: the round under way
    waits for their labels) or waiting for the others, in their cards' order: the partial
    index queue_card_disputed, by state."""
    return QueueCard.objects.filter(
        annotator_id=user.pk, study_id=study.pk, status="disputed", answered=answered
    ).order_by("ordinal")


def next_card(study, user, turn=None) -> int | None:
    """The id of `user`'s next card to label: the first fresh one (neither done nor put off)
    after `turn`, else from the start; then those put off, the oldest first (a card just
    skipped is the very last). Seeks on the partial indexes: one query."""
    q = connection.ops.quote_name
    table = q(QueueCard._meta.db_table)
    fresh = f"""SELECT turn_id FROM {table} WHERE annotator_id = %(user)s
        AND study_id = %(study)s AND done = %(false)s AND put_off_at IS NULL"""
    later = f"""SELECT turn_id FROM {table} WHERE annotator_id = %(user)s
        AND study_id = %(study)s AND done = %(false)s AND put_off_at IS NOT NULL
        ORDER BY put_off_at, turn_id LIMIT 1"""
    params = {"user": user.pk, "study": study.pk, "false": False}
    parts = []
    if turn is not None:
        params["turn"] = turn.pk
        after = f"""{fresh} AND ordinal > (SELECT ordinal FROM {table}
            WHERE turn_id = %(turn)s AND annotator_id = %(user)s)
            ORDER BY ordinal LIMIT 1"""
        parts.append(f"({after})")
    parts.append(f"({fresh} ORDER BY ordinal LIMIT 1)")
    parts.append(f"({later})")
    sql = "SELECT COALESCE(" + ", ".join(parts) + ")"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def place(study, user, turn) -> tuple[int, int, int, int | None, int | None]:
    """(cards, done, the card's place, the card before, the card after) of `user` in
    `study`, by the card's row and its neighbours' (ordinal - 1, + 1): one query."""
    q = connection.ops.quote_name
    table = q(QueueCard._meta.db_table)
    counts = q(QueueProgress._meta.db_table)
    sql = f"""SELECT
        (SELECT cards FROM {counts} WHERE annotator_id = %(user)s AND study_id = %(study)s),
        (SELECT done FROM {counts} WHERE annotator_id = %(user)s AND study_id = %(study)s),
        me.ordinal,
        (SELECT n.turn_id FROM {table} n WHERE n.annotator_id = %(user)s
            AND n.study_id = %(study)s AND n.ordinal = me.ordinal - 1),
        (SELECT n.turn_id FROM {table} n WHERE n.annotator_id = %(user)s
            AND n.study_id = %(study)s AND n.ordinal = me.ordinal + 1)
        FROM {table} me WHERE me.turn_id = %(turn)s AND me.annotator_id = %(user)s"""
    params = {"user": user.pk, "study": study.pk, "turn": turn.pk}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return (*progress(study, user)[::-1], 0, None, None)
    cards, done, ordinal, prev_id, next_id = row
    return cards or 0, done or 0, ordinal, prev_id, next_id


# --- seats: whoever sits down in or leaves a group holds its cards, or no longer -----------


def _seats_changed(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """Group.annotators changed (from either side: group.annotators.add(user) or
    user.annotation_groups.remove(group)): rebuild the rows of whoever it concerns."""
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if not reverse:  # instance: a group; pk_set: users
        if action == "post_clear":
            rebuild(instance.study_id)
        else:
            rebuild(instance.study_id, pk_set)
        return
    # instance: a user; pk_set: groups (None on clear: every study they hold cards in)
    if pk_set is None:
        studies = QueueProgress.objects.filter(annotator_id=instance.pk).values_list(
            "study_id", flat=True
        )
        for study_id in set(studies):
            rebuild(study_id, [instance.pk])
    else:
        rebuild_groups(pk_set, users=[instance.pk])


m2m_changed.connect(
    _seats_changed, sender=Group.annotators.through, dispatch_uid="queue_seats_changed"
)


def _assigned(sender, instance, created, raw=False, **kwargs) -> None:
    """One assignment saved (Conversation.assign writes them in bulk and rebuilds itself)."""
    if created and not raw:
        rebuild_groups([instance.group_id])


def _tagged(sender, instance, created, raw=False, **kwargs) -> None:
    """An open-sort tag set: the card is done in its annotator's queue."""
    if created and not raw:
        mark_done(instance.annotator_id, [instance.turn_id])


def _connect() -> None:
    from .opensort import TagSet
    from .rounds import Assignment

    post_save.connect(_assigned, sender=Assignment, dispatch_uid="queue_assigned")
    post_save.connect(_tagged, sender=TagSet, dispatch_uid="queue_tagged")


class KeptCards:
    """My cards from the rows kept here, as a sequence a Paginator pages: all of them
    (`state` ""), those to do or those labelled. Its length is a kept count, and a page of all
    my cards is a seek on my places (ordinal in (bottom, top]); one to do or labelled a
    bounded walk of the same index. Three queries a page, whatever the number of cards: the
    pages' My cards (views/shared/nav.my_cards) and the API's list of my cards
    (api/views.cards) read it."""

    def __init__(self, study: Study, user, state: str = ""):
        self.study, self.user, self.state = study, user, state

    def count(self) -> int:
        done, cards = progress(self.study, self.user)
        return {"": cards, "todo": cards - done, "labelled": done}[self.state]

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[Turn]:
        rows = QueueCard.objects.filter(annotator_id=self.user.pk, study_id=self.study.pk)
        rows = rows.order_by("ordinal").values_list("turn_id", "done")
        if self.state == "":
            rows = rows.filter(ordinal__gt=window.start, ordinal__lte=window.stop)
        else:
            rows = rows.filter(done=self.state == "labelled")[window]
        done = dict(rows)
        turns = (
            Turn.objects.filter(pk__in=list(done))
            .with_status_for(self.user)
            .select_related("conversation")
            .defer("reply_text", "reply_parts", "metadata", "conversation__metadata")
        )
        by_id = {t.pk: t for t in turns}
        out = []
        for turn_id, is_done in done.items():
            turn = by_id[turn_id]
            turn.done = is_done
            out.append(turn)
        return out
